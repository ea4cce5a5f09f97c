// Import worker under TypeScript (tests, `node --import tsx`): worker threads do not inherit tsx's
// loader, so register it here, then load the TypeScript worker. The compiled build uses import.worker.js.
import { register } from 'tsx/esm/api';

register();
await import('./import.worker.ts');
