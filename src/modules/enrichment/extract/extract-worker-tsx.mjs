// Extraction worker under TypeScript (tests, `node --import tsx`): worker threads do not inherit tsx's
// loader, so register it here, then load the TypeScript worker. The compiled build uses extract.worker.js.
import { register } from 'tsx/esm/api';

register();
await import('./extract.worker.ts');
