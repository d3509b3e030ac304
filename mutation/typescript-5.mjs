// The project compiles with TypeScript 7, which has no compiler API yet;
// Stryker (its checker, and its sandbox rewriting tsconfig.json) needs
// one. This resolve hook gives Stryker, and only it, TypeScript 5.9
// (installed as `typescript-5`).
import { register } from 'node:module';

register('data:text/javascript,' + encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if (specifier === 'typescript' && context.parentURL?.includes('/node_modules/@stryker-mutator/')) {
    return next('typescript-5', context);
  }
  return next(specifier, context);
}`), import.meta.url);
