import { parseDocument } from 'yaml';
import { badFile } from '../shared/errors.ts';

/** One YAML document as plain data; a syntax error names the file and line. */
export function parseYaml(text: string, source: string): unknown {
  const doc = parseDocument(text);
  const [error] = doc.errors;
  if (error !== undefined) throw badFile(source, `not valid YAML: ${firstLine(error.message)}`);
  return doc.toJS();
}

export const firstLine = (text: string): string => text.split('\n')[0] ?? '';
