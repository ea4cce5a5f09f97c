// Plain JavaScript: it runs in a worker thread before any TypeScript loader is there.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { workerData } from 'node:worker_threads';

/**
 * Loads a worker thread's module when the application runs from its TypeScript sources (tests, `node
 * --import tsx`), where threads do not inherit tsx's loader. When the test runner found the compiled build
 * made from these very sources (it sets LEADATLAS_COMPILED_WORKERS=1 after scripts/dist-digest.js), the
 * compiled twins in dist/ are loaded instead: the same code, started without the TypeScript loader in a
 * third of the CPU. Otherwise, or when a module has no twin (a test's own tasks module), tsx is registered
 * in the thread and the TypeScript modules are loaded. `moduleKeys`: the fields of workerData that name
 * modules the worker loads.
 */
export async function loadWorkerModule(moduleUrl, moduleKeys = []) {
  if (process.env.LEADATLAS_COMPILED_WORKERS === '1') {
    const twins = [moduleUrl, ...moduleKeys.map((key) => workerData[key])].map(compiledTwin);
    if (twins.every((twin) => twin !== undefined)) {
      moduleKeys.forEach((key, i) => (workerData[key] = twins[i + 1]));
      await import(twins[0]);
      return;
    }
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import(moduleUrl);
}

/** `…/src/a/b.ts` → `…/dist/a/b.js`, if that file is there. */
function compiledTwin(href) {
  const at = href.lastIndexOf('/src/');
  if (at < 0 || !href.endsWith('.ts')) return undefined;
  const twin = `${href.slice(0, at)}/dist/${href.slice(at + '/src/'.length, -'.ts'.length)}.js`;
  return existsSync(fileURLToPath(twin)) ? twin : undefined;
}
