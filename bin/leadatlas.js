#!/usr/bin/env node
// Runs the compiled CLI (`npm run build` writes dist/; `npm ci` builds it through the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  console.error('leadatlas: dist/ is missing; run `npm run build` (or `npm ci`) first.');
  process.exit(1);
}
await import(entry.href);
