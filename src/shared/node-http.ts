import { createRequire } from 'node:module';

// `import … from 'node:http'` in an ES module reads every export of the
// builtin, and node:http's lazy WebSocket/EventSource exports then load
// undici, several MB more for an idle agent (docs/benchmarks.md, "Figures
// measured"). So the agent takes http and https through require, and never
// calls fetch on its own paths.
const require = createRequire(import.meta.url);

export const http = require('node:http') as typeof import('node:http');
export const https = require('node:https') as typeof import('node:https');
