// Read-pool worker under TypeScript (tests, `node --import tsx`): see worker-under-tsx.mjs. The compiled
// build uses read-worker.js directly.
import { loadWorkerModule } from '../worker-under-tsx.mjs';

await loadWorkerModule(new URL('./read-worker.ts', import.meta.url).href, ['tasksModule']);
