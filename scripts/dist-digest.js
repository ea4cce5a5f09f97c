#!/usr/bin/env node
// The digest of what the compiled build (dist/) is made from: the sources under src/ (tests excluded), the
// TypeScript settings and the compiler's version. `npm run build` writes it to dist/.source-digest. The
// tests run the compiled build in their child processes (test/helpers/cli.ts) and worker threads
// (src/infra/worker-under-tsx.mjs) only while that file matches the sources, and the TypeScript sources
// under tsx otherwise, so a stale build is never what is tested: the test file itself always runs its source.
//
//   node scripts/dist-digest.js --write    after a build
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(import.meta.url), '../..');
export const digestFile = join(root, 'dist', '.source-digest');

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [] : [join(dir, e.name)],
  );
}

export function sourceDigest() {
  const hash = createHash('sha256');
  const compiler = JSON.parse(readFileSync(join(root, 'node_modules/typescript/package.json'), 'utf8')).version;
  hash.update(`typescript ${compiler}\0`);
  for (const file of [...walk(join(root, 'src')), join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json')].sort())
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

/** True when dist/ was built from the sources as they are now. */
export function distIsCurrent() {
  try {
    return readFileSync(digestFile, 'utf8').trim() === sourceDigest();
  } catch {
    return false;
  }
}

/**
 * The environment the test runners give the test processes: LEADATLAS_COMPILED_WORKERS=1 while dist/ is
 * current (unless TEST_COMPILED=0 asks for the TypeScript sources everywhere).
 */
export function compiledBuildEnv() {
  return { LEADATLAS_COMPILED_WORKERS: process.env.TEST_COMPILED !== '0' && distIsCurrent() ? '1' : '0' };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--write')) writeFileSync(digestFile, `${sourceDigest()}\n`);
  else console.log(distIsCurrent() ? 'dist/ is current' : 'dist/ is stale or missing: npm run build');
}
