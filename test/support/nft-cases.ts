/**
 * The native nftables cases of src/nftables/testdata/cases.json: what
 * src/nftables/rules.test.ts renders (<case>.nft) and
 * test/e2e/nftables-istio-netns.test.ts applies in a pod (<case>.ruleset).
 */
import { readFile } from 'node:fs/promises';

export interface NftCase {
  name: string;
  about: string;
  args: string[];
  env: Record<string, string>;
  ipv6: boolean;
  resolv?: string[];
}

/** The testdata folder: cases.json and each case's expected files. */
export const nftTestdata = new URL('../../src/nftables/testdata/', import.meta.url);
export const nftCases = JSON.parse(await readFile(new URL('cases.json', nftTestdata), 'utf8')) as NftCase[];
