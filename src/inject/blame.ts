import { AgentError, badFile } from '../shared/errors.ts';

/**
 * Runs `check`; a usage error it throws is re-thrown as one about `file`,
 * prefixed with `where` (a document, a field), so the line names both.
 */
export function blame<T>(file: string, where: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof AgentError) || error.exitCode !== 2) throw error;
    throw badFile(file, `${where}: ${error.message}`, error);
  }
}
