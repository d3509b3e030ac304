// Stryker over the rooms that guard the pod (mutation/rooms.mjs); run it
// through scripts/mutation.sh (npm run mutation), which picks the room,
// the Node that runs our .ts tests and the TypeScript the checker needs.
import { existsSync, writeFileSync } from 'node:fs';
import { rooms } from './rooms.mjs';

const names = (process.env.MUTATION_ROOM ?? '').split(',').filter(Boolean);
const chosen = names.length > 0 ? names : Object.keys(rooms);
for (const name of chosen) if (!rooms[name]) throw new Error(`MUTATION_ROOM: no room "${name}"; rooms: ${Object.keys(rooms).join(', ')}`);
const pick = (key) => [...new Set(chosen.flatMap((name) => rooms[name][key]))];

// The checker compiles the room's files and tests (and what they import), not the whole project:
// a smaller program checks each mutant several times faster.
const roomTsconfig = 'mutation/tsconfig.room.json';
const strip = (file) => file.replace(/:\d+-\d+$/, '');
writeFileSync(
  roomTsconfig,
  `${JSON.stringify({ extends: './tsconfig.json', include: ['../test/support/*.d.ts'], files: [...pick('mutate'), ...pick('tests').filter((file) => existsSync(file))].map((file) => `../${strip(file)}`) }, null, 2)}\n`,
);

export default {
  $schema: '../node_modules/@stryker-mutator/core/schema/stryker-schema.json',
  packageManager: 'npm',
  testRunner: 'tap',
  // Each test file runs as `node <file>`: Node strips the types itself, and prints TAP when piped.
  tap: { testFiles: pick('tests').filter((file) => existsSync(file)), nodeArgs: ['--test-reporter=tap'], forceBail: true },
  checkers: process.env.MUTATION_TYPECHECK === '0' ? [] : ['typescript'],
  tsconfigFile: roomTsconfig,
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: pick('mutate'),
  coverageAnalysis: 'perTest',
  // The machine is shared: one test process and one checker at a time.
  concurrency: 1,
  // A mutant that loops is cut off this long past the test's normal time (Stryker adds it to timeoutFactor x the dry run's).
  timeoutMS: 3000,
  ignorers: ['equivalent'],
  plugins: ['@stryker-mutator/tap-runner', '@stryker-mutator/typescript-checker', './mutation/equivalent.mjs'],
  // Only what the unit tests read goes into the sandbox (no Envoy, no bundle, no e2e; the wasm room's OCI registry peer is TypeScript the tests import).
  ignorePatterns: ['/.tools', '/dist', '/bench', '/docs', '/test/e2e', '/test/docker', '/test/peers', '!/test/peers/oci-registry', '/reports', '*.log'],
  // A re-run after new tests only runs the mutants whose code or covering tests changed.
  incremental: process.env.MUTATION_INCREMENTAL !== '0',
  incrementalFile: `reports/mutation/${chosen.join('+')}.incremental.json`,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${chosen.join('+')}.html` },
  jsonReporter: { fileName: `reports/mutation/${chosen.join('+')}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  thresholds: { high: 95, low: 90, break: null },
};
