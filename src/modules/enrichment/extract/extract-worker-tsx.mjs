// Extraction worker under TypeScript (tests, `node --import tsx`): see infra/worker-under-tsx.mjs. The
// compiled build uses extract.worker.js directly.
import { loadWorkerModule } from '../../../infra/worker-under-tsx.mjs';

await loadWorkerModule(new URL('./extract.worker.ts', import.meta.url).href);
