import type { Command } from 'commander';
import { importDemoDataIfEmpty, prepareDatabase } from '../../bootstrap.ts';
import { loadConfig } from '../../config.ts';
import { openDatabase } from '../../infra/db/database.ts';
import { limitHeapGrowth } from '../../infra/memory.ts';
import { log } from '../options.ts';
import { printImportSummary } from '../progress.ts';

/** `leadatlas serve`: migrations, the demo data into an empty catalog, the API until SIGTERM. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('apply migrations, import the demo data into an empty catalog, and serve the API')
    .action(async () => {
      const config = loadConfig();
      const db = openDatabase(config.DATABASE_URL);
      await prepareDatabase(db, log);
      if (config.IMPORT_DEMO_DATA) {
        for (const s of await importDemoDataIfEmpty(db, config.DEMO_DATA_DIR, log)) printImportSummary(s);
      }
      // Loaded here, not at the top: the HTTP server's modules take start-up time that `import`, `stats`… never need.
      const { buildApp } = await import('../../app.ts');
      // After the demo import (its worker holds the gazetteer, which would then be collected far more often).
      limitHeapGrowth();
      const app = await buildApp({ config, db });
      // On SIGTERM/SIGINT: stop accepting connections, let the requests in flight (streaming exports too)
      // finish for up to SHUTDOWN_TIMEOUT, cut what is left, then close the database and exit.
      let stopping = false;
      const shutdown = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        app.log.info(
          { signal, timeoutS: config.SHUTDOWN_TIMEOUT },
          'shutting down: no new connections, waiting for the requests in flight',
        );
        const cut = setTimeout(() => {
          app.log.warn('shutdown timeout: closing the connections still open');
          app.server.closeAllConnections();
        }, config.SHUTDOWN_TIMEOUT * 1000);
        cut.unref();
        await app.close();
        clearTimeout(cut);
        await db.close();
        process.exit(0);
      };
      process.once('SIGINT', () => void shutdown('SIGINT'));
      process.once('SIGTERM', () => void shutdown('SIGTERM'));
      await app.listen({ host: config.HOST, port: config.PORT });
    });
}
