import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '../..');

/**
 * Compiles src/ as `npm run build` does, into var/bench-build/ (inside the project, so packages resolve),
 * and returns a loader for its modules. Import benchmarks run the compiled JavaScript, as `leadatlas
 * import` does: under tsx the import worker would compile TypeScript on every start, inside the timed
 * span, which no user ever waits for.
 */
export function compileForBench(): <T>(path: string) => Promise<T> {
  const out = join(root, 'var', 'bench-build');
  rmSync(out, { recursive: true, force: true });
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', out], { encoding: 'utf8' });
  // tsc still writes JavaScript when it finds type errors; say so rather than measure silently.
  if (tsc.status !== 0) console.log(`tsc reported errors (JavaScript written anyway):\n${tsc.stdout.split('\n').slice(0, 5).join('\n')}`);
  return <T>(path: string) => import(pathToFileURL(join(out, path)).href) as Promise<T>;
}
