import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { Command } from 'commander';
import { badFile } from '../../shared/errors.ts';
import type { CommandContext } from '../context.ts';

export interface InjectOptions {
  filename: string;
  values?: string | undefined;
  template?: string | undefined;
  output?: string | undefined;
}

/** `pilot-agent inject`: adds the sidecar to the workloads of a manifest, like `istioctl kube-inject`. */
export function injectCommand(context: CommandContext): Command {
  return new Command('inject')
    .description('Inject the istio-proxy sidecar and istio-init into Kubernetes workloads')
    .requiredOption('-f, --filename <file>', "manifest to read (multi-document YAML), or '-' for stdin")
    .option('--values <file>', 'values over templates/sidecar-injection-values.yaml')
    .option('--template <file>', 'injection template (default templates/sidecar-injection.yaml)')
    .option('-o, --output <file>', 'write here instead of stdout (replaced only when every document succeeded)')
    .action(async (options: InjectOptions) => {
      await runInject(options, context);
    });
}

/** Reads everything and injects everything before writing anything. */
export async function runInject(options: InjectOptions, context: CommandContext): Promise<void> {
  // Loaded on use: the injector (yaml, templates) has no business in a sidecar's memory.
  const [{ loadInjectionInputs, readText }, { injectManifest }] = await Promise.all([import('../../inject/load.ts'), import('../../inject/manifest.ts')]);
  const inputs = await loadInjectionInputs({ templatePath: options.template, valuesPath: options.values });
  const fromStdin = options.filename === '-';
  const text = fromStdin ? await readStream(stdinOf(context)) : await readText(options.filename);
  const warn = (line: string) => void context.stderr.write(`warning: ${line}\n`);
  const output = injectManifest(text, { ...inputs, warn, source: fromStdin ? 'stdin' : options.filename });
  if (options.output === undefined) {
    context.stdout.write(output);
    return;
  }
  await writeAtomically(options.output, output);
}

/** CommandContext has no stdin yet; tests may pass one on the context object. */
function stdinOf(context: CommandContext): Readable {
  return (context as CommandContext & { stdin?: Readable }).stdin ?? process.stdin;
}

async function readStream(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer | string));
  return Buffer.concat(chunks).toString('utf8');
}

/** A reader of `path` sees the old file or the new one, never half of one. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(temp, text, { mode: 0o644 });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw badFile(path, `cannot write: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, error);
  }
}
