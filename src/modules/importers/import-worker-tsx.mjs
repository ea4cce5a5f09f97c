// Import worker under TypeScript (tests, `node --import tsx`): see infra/worker-under-tsx.mjs. The compiled
// build uses import.worker.js directly.
import { loadWorkerModule } from '../../infra/worker-under-tsx.mjs';

await loadWorkerModule(new URL('./import.worker.ts', import.meta.url).href);
