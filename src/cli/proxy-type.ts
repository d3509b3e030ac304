import { InvalidArgumentError } from 'commander';
import { proxyTypes, type ProxyType } from '../settings/proxy-type.ts';
import { badFlag } from '../shared/errors.ts';

const isType = (word: string): word is ProxyType => (proxyTypes as readonly string[]).includes(word);
const isFlag = (word: string) => word.startsWith('-');

/** Commander's check of the `[type]` word, except that a flag there is left for splitProxyArgs to name. */
export function parseTypeWord(word: string): string {
  if (isFlag(word) || isType(word)) return word;
  throw new InvalidArgumentError(`Allowed choices are ${proxyTypes.join(', ')}.`);
}

/**
 * The proxy type from the words commander did not take as known flags, and
 * the words ignored, as Istio's agent reads `proxy [unknown flags] [type]`:
 * its flag parser skips an unknown flag, and the word after one without `=`
 * as its value. A proxy type taken that way would silently run a sidecar,
 * so that one is refused naming the flag.
 */
export function splitProxyArgs(words: readonly string[]): { type: ProxyType; ignored: string[] } {
  const ignored: string[] = [];
  let index = 0;
  while (index < words.length && isFlag(words[index]!)) {
    const flag = words[index++]!;
    // The end of flags: what follows is the type, as for Istio's flag parser.
    if (flag === '--') break;
    ignored.push(flag);
    const next = words[index];
    if (flag.includes('=') || next === undefined || isFlag(next)) continue;
    const swallowed = `Istio's agent would take "${next}" as its value and run a sidecar`;
    if (isType(next)) throw badFlag(flag, `unknown flag before the proxy type "${next}" (${swallowed}): put the type first`);
    ignored.push(next);
    index++;
  }
  const type = words[index] ?? 'sidecar';
  if (!isType(type)) throw badFlag('proxy', `argument 'type': "${type}" is not one of ${proxyTypes.join(', ')}`);
  return { type, ignored: [...ignored, ...words.slice(index + 1)] };
}
