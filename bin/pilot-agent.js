#!/usr/bin/env node
import { main } from '../dist/bundle/pilot-agent.js';

await main();
