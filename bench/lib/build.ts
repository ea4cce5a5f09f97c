import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '../..');

/**
 * Compiles src/ as `npm run build` does, into var/bench-build/ (inside the project, so packages resolve),
 * and returns a loader for its modules; `dir` is the compiled tree (to run its `cli/main.js`). Import
 * benchmarks run the compiled JavaScript, as `leadatlas import` does: under tsx the import worker would
 * compile TypeScript on every start, inside the timed span, which no user ever waits for.
 */
export function compileForBench(): (<T>(path: string) => Promise<T>) & { dir: string } {
  const out = compileTree(root, 'bench-build');
  return Object.assign(<T>(path: string) => import(pathToFileURL(join(out, path)).href) as Promise<T>, { dir: out });
}

/**
 * Compiles the src/ of `tree` (this checkout, or a worktree of another commit) with its own build settings
 * and this checkout's TypeScript into `tree`/var/`dir`/, emptied first; returns that directory.
 */
export function compileTree(tree: string, dir: string): string {
  const out = join(tree, 'var', dir);
  rmSync(out, { recursive: true, force: true });
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(tree, 'tsconfig.build.json'), '--outDir', out],
    { encoding: 'utf8' },
  );
  // tsc still writes JavaScript when it finds type errors; say so rather than measure silently.
  if (tsc.status !== 0)
    console.log(`tsc reported errors in ${tree} (JavaScript written anyway):\n${tsc.stdout.split('\n').slice(0, 5).join('\n')}`);
  return out;
}
