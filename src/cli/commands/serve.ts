import cluster from 'node:cluster';
import type { Command } from 'commander';
import { importDemoDataIfEmpty, prepareDatabase } from '../../bootstrap.ts';
import { type Config, loadConfig } from '../../config.ts';
import { openDatabase } from '../../infra/db/database.ts';
import { limitHeapGrowth } from '../../infra/memory.ts';
import { log } from '../options.ts';
import { printImportSummary } from '../progress.ts';
import { serveCluster, workerRank } from './serve-cluster.ts';

/**
 * `leadatlas serve`: migrations, the demo data into an empty catalog, the API until SIGTERM; in `WEB_CONCURRENCY`
 * processes sharing the port (serve-cluster.ts), the first two steps once, in the primary.
 */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('apply migrations, import the demo data into an empty catalog, and serve the API')
    .action(async () => {
      const config = loadConfig();
      if (cluster.isPrimary && config.WEB_CONCURRENCY > 1) {
        await serveCluster(config, async () => {
          const db = openDatabase(config.DATABASE_URL);
          try {
            await prepare(config, db);
          } finally {
            await db.close();
          }
        });
        return;
      }
      const db = openDatabase(config.DATABASE_URL);
      if (cluster.isPrimary) await prepare(config, db);
      // Loaded here, not at the top: the HTTP server's modules take start-up time that `import`, `stats`… never need.
      const { buildApp } = await import('../../app.ts');
      // After the demo import (its worker holds the gazetteer, which would then be collected far more often).
      limitHeapGrowth();
      const app = await buildApp({ config, db, background: workerRank() === 0 });
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

/** Migrations, then the demo data into an empty catalog (IMPORT_DEMO_DATA). */
async function prepare(config: Config, db: ReturnType<typeof openDatabase>): Promise<void> {
  await prepareDatabase(db, log);
  if (config.IMPORT_DEMO_DATA) {
    for (const s of await importDemoDataIfEmpty(db, config.DEMO_DATA_DIR, log)) printImportSummary(s);
  }
}
