import Fastify, { type FastifyInstance } from 'fastify';
import { type Config, trustProxyOption } from './config.ts';
import { checkpointElsewhere, startCheckpointer } from './infra/db/checkpointer.ts';
import { type Db, sizeCacheForRole } from './infra/db/database.ts';
import { createReadPool } from './infra/db/read-pool.ts';
import { finiteNumbersValidator } from './infra/http/finite-numbers.ts';
import type { TypeBoxTypeProvider } from './infra/http/type-provider.ts';
import { loggerOptions } from './infra/logger.ts';
import { randomBytesFromPool } from './infra/random.ts';
import { installationStorage } from './infra/storage.ts';
import { usageRoutes } from './modules/auth/usage.routes.ts';
import { dashboardRoutes } from './modules/dashboard/dashboard.routes.ts';
import { EnrichmentWorker } from './modules/enrichment/enrichment.ts';
import { enrichmentJobsRoutes } from './modules/enrichment/enrichment-jobs.routes.ts';
import { EnrichmentJobRunner } from './modules/enrichment/enrichment-jobs.service.ts';
import { VerifyLoop } from './modules/enrichment/verify.ts';
import { exportJobsRoutes } from './modules/exports/export-jobs.routes.ts';
import { createExportJobs } from './modules/exports/export-jobs.ts';
import { exportsRoutes } from './modules/exports/exports.routes.ts';
import { leadsRoutes } from './modules/leads/leads.routes.ts';
import { matchRoutes } from './modules/match/match.routes.ts';
import { matchDepsOf } from './modules/match/match.service.ts';
import { matchJobsRoutes } from './modules/match/match-jobs.routes.ts';
import { createMatchJobs } from './modules/match/match-jobs.ts';
import { mcpRoutes } from './modules/mcp/mcp.routes.ts';
import { MonitorEvaluator } from './modules/monitors/monitors.evaluator.ts';
import { monitorsRoutes } from './modules/monitors/monitors.routes.ts';
import { monitorWebhooks } from './modules/monitors/monitors.service.ts';
import { PlaceMaintenance } from './modules/places/place-maintenance.ts';
import { placesRoutes } from './modules/places/places.routes.ts';
import { referenceRoutes } from './modules/reference/reference.routes.ts';
import { EngineSnapshot, snapshotPathOf } from './modules/search/engine/engine-snapshot.ts';
import type { EngineState } from './modules/search/engine/engine-state.ts';
import { HoursFollower } from './modules/search/engine/hours-follower.ts';
import { createSearchEngine } from './modules/search/engine/search-engine.ts';
import { readCacheVersion } from './modules/search/open-filter.ts';
import { createReadTasks, readTasksModule } from './modules/search/read-tasks.ts';
import { searchRoutes } from './modules/search/search.routes.ts';
import { createSearch } from './modules/search/search.ts';
import { suppressionsRoutes } from './modules/suppressions/suppressions.routes.ts';
import { TrustMaintenance } from './modules/trust/trust.maintenance.ts';
import { refreshTrust } from './modules/trust/trust.service.ts';
import { authPlugin } from './plugins/auth.ts';
import { clientErrorHandler, errorsPlugin, frameworkErrors } from './plugins/errors.ts';
import { healthPlugin } from './plugins/health.ts';
import { openapiPlugin } from './plugins/openapi.ts';
import { rateLimitPlugin } from './plugins/ratelimit.ts';
import { securityHeadersPlugin } from './plugins/security-headers.ts';
import { strictQueryPlugin } from './plugins/strict-query.ts';

export interface AppOptions {
  config: Config;
  db: Db;
  /**
   * Whether this process runs the background work: export, match and enrichment jobs, monitors, the opening-hours
   * and trust passes, re-verification, WAL checkpoints. True (the default) but in the other processes of a
   * cluster (`WEB_CONCURRENCY`, serve-cluster.ts), where one process runs it for all of them.
   */
  background?: boolean;
}

export type App = FastifyInstance;

/** Builds the HTTP application: plugins first, then one routes plugin per module. */
export async function buildApp({ config, db, background = true }: AppOptions): Promise<App> {
  const app = Fastify({
    logger: loggerOptions(config.LOG_LEVEL, config.LOG_FORMAT),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : `req_${randomBytesFromPool(9).toString('base64url')}`;
    },
    requestIdHeader: false,
    // No limit on a hook: the search index's first build (onReady) takes what the catalog's size asks, and `listen` waits for it.
    pluginTimeout: 0,
    trustProxy: trustProxyOption(config.TRUST_PROXY),
    ajv: {
      customOptions: { allErrors: true, coerceTypes: 'array', useDefaults: true, removeAdditional: false, verbose: true },
    },
    // Every number a request schema accepts must be finite after coercion (see finite-numbers.ts).
    schemaController: { compilersFactory: { buildValidator: finiteNumbersValidator() } },
    // Answers for requests that never reach a route are problem documents too.
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(securityHeadersPlugin, { publicUrl: config.PUBLIC_URL });
  const storage = installationStorage(db.sqlitePath, config.EXPORT_DATA_DIR, config.DISK_MIN_FREE_MB);
  // The rate limits' hook before the errors plugin's: a request refused for its URL's length is charged too,
  // and its 414 carries the RateLimit fields like every other answer.
  await app.register(rateLimitPlugin, { config });
  await app.register(errorsPlugin, { storage });
  await app.register(openapiPlugin, { publicUrl: config.PUBLIC_URL });
  await app.register(authPlugin, { db, config });

  await app.register(strictQueryPlugin);
  // What /readyz shows of the search engine, made further down (it needs the read pool).
  const engineState: { current: () => EngineState } = { current: () => ({ engine: 'sql' }) };
  await app.register(healthPlugin, { db, storage, searchIndex: () => engineState.current() });

  await app.register(exportsRoutes, { db, config });
  // Export jobs run in the background from the database: started once the app is ready, stopped (their
  // jobs put back in the queue) before the database closes.
  const jobs = createExportJobs({ db, config, log: app.log, quotas: app.quotas });
  if (background) inBackground(app, jobs, 'first');
  await app.register(exportJobsRoutes, { db, config, jobs });
  // Enrichment crawls places' websites in the background when ENRICH_WORKERS > 0, like export jobs:
  // started once the app is ready, stopped (its sites put back in the queue) before the database closes.
  const enrichment = new EnrichmentWorker({ db, config, log: app.log });
  // Enrichment jobs only queue sites: every server runs them, whoever crawls.
  const enrichmentJobs = new EnrichmentJobRunner({
    db,
    log: app.log,
    allowance: app.quotas,
    leaseSeconds: config.ENRICH_LEASE,
    onQueued: () => enrichment.poke(),
    onEvent: () => jobs.webhooks.poke(),
  });
  if (background)
    inBackground(app, { start: () => [enrichment.start(), enrichmentJobs.start()], close: () => closeInTurn(enrichmentJobs, enrichment) });
  await app.register(enrichmentJobsRoutes, { db, runner: enrichmentJobs });
  // Monitors are evaluated from the change log by every server, or (MONITOR_EVALUATOR=off) by none of them when
  // `leadatlas monitors` runs in a process of its own: an evaluation commits only when its monitor is still at
  // the version it read, so evaluators never record a change twice.
  if (config.MONITOR_EVALUATOR === 'serve' && background) {
    const monitors = new MonitorEvaluator({
      db,
      pollMs: config.MONITOR_POLL_MS,
      onError: (error) => app.log.error({ err: error }, 'monitor evaluation failed'),
      // Deliveries are queued in the events' transaction; the dispatcher's next poll (a second) sends them.
      hooks: monitorWebhooks,
    });
    inBackground(app, monitors);
  }
  await app.register(monitorsRoutes, { db, limits: { perAccount: config.MONITORS_PER_ACCOUNT, maxPlaces: config.MONITOR_MAX_PLACES } });
  await app.register(leadsRoutes, { db });
  await app.register(placesRoutes, { db });
  await app.register(suppressionsRoutes, { db });
  await app.register(usageRoutes);

  const reads = createReadPool({
    db,
    workers: config.DB_READ_WORKERS,
    budgetMs: config.SEARCH_TIME_BUDGET_MS,
    tasks: createReadTasks(),
    tasksModule: readTasksModule,
    // Every cached task reads `places`, whose version moves with any change to it; a search with an open
    // filter reads the opening-hours tables too, which each pass replaces without moving it.
    cache: {
      entries: config.READ_CACHE_ENTRIES,
      tasks: ['searchPage', 'countMatches', 'placeCountsByCategory', 'placeCountsByCountry'],
      version: readCacheVersion(db),
    },
  });
  app.addHook('onClose', () => reads.close());
  const checkpointer = background ? startCheckpointer(db) : checkpointElsewhere(db);
  if (checkpointer) app.addHook('onClose', () => checkpointer.stop());
  // The shared connection only appends (saved searches, leads) and looks up tokens and names.
  sizeCacheForRole(db, 'server');
  // The opening-hours pass and the pruning of the change log, in the background; after each check of the hours,
  // the engine reloads what it holds of them. A read the tables cannot answer starts the pass through it at once.
  const maintenance = new PlaceMaintenance({
    db,
    log: app.log,
    hoursWindowDays: config.OPENING_HOURS_WINDOW_DAYS,
    hoursCheckMs: config.OPENING_HOURS_CHECK_MS,
    afterHoursCheck: () => engine.followHours(),
  });
  // The one search engine of this node: its in-memory index is built before the server listens and follows
  // the catalog's change log from then on (SEARCH_ENGINE, SEARCH_ENGINE_POLL_MS).
  const engine = createSearchEngine(config.SEARCH_ENGINE, {
    db,
    reads,
    log: app.log,
    pollMs: config.SEARCH_ENGINE_POLL_MS,
    maintenance,
    // A read with a trust filter that finds the pass behind the catalog runs it at once (`trustReady`).
    trustPassNow: () => refreshTrust(db),
    ...snapshotOf(config, db, app),
  });
  engineState.current = () => engine.state();
  inBackground(app, engine);
  if (background) {
    inBackground(app, maintenance);
    inBackground(app, new TrustMaintenance({ db, pollMs: config.TRUST_POLL_MS, log: app.log }));
    // Re-verification of email domains and websites in the background (VERIFY_INTERVAL_MS; off by default).
    inBackground(app, new VerifyLoop({ db, config, log: app.log }));
  } else {
    // The background process runs the opening-hours pass; this one follows the tables it leaves.
    inBackground(app, new HoursFollower(engine, config.OPENING_HOURS_CHECK_MS, app.log));
  }
  // The one search object: the API's routes, the dashboard and MCP (through the routes) share its caches.
  const search = createSearch(db, reads, engine, config);
  await app.register(searchRoutes, { config, search });
  await app.register(matchRoutes, { deps: matchDepsOf(search) });
  await app.register(referenceRoutes, { db, reads });
  // Match jobs run in the background as export jobs do, their ends told through the same webhook queue.
  const matchJobs = createMatchJobs({ db, config, log: app.log, search, allowance: app.quotas, onEvent: () => jobs.webhooks.poke() });
  if (background) inBackground(app, matchJobs, 'first');
  await app.register(matchJobsRoutes, { db, config, jobs: matchJobs, allowance: app.quotas });
  await app.register(dashboardRoutes, { config, db, jobs, search, matchJobs });
  await app.register(mcpRoutes);
  return app;
}

/** The index snapshot of this database, when there is one (`SEARCH_INDEX_SNAPSHOT`). */
function snapshotOf(config: Config, db: Db, app: App): { snapshot?: EngineSnapshot } {
  const path = snapshotPathOf(config.SEARCH_INDEX_SNAPSHOT, db);
  return path ? { snapshot: new EngineSnapshot(db, path, app.log) } : {};
}

/** Closes each worker after the one before it has closed. */
async function closeInTurn(...workers: Array<{ close(): unknown }>): Promise<void> {
  for (const worker of workers) await worker.close();
}

/**
 * A worker of the server's background: started once the app is ready, stopped before the database closes.
 * `first`: stopped as soon as the server is asked to close (`preClose`), before the requests in flight end and
 * the other closes run: a job runner, whose running jobs go back to the queue for the next process; stopped
 * later, a job could run to its end during the closes.
 */
function inBackground(app: App, worker: { start(): unknown; close(): unknown }, when: 'first' | 'last' = 'last'): void {
  app.addHook('onReady', async () => {
    await worker.start();
  });
  app.addHook(when === 'first' ? 'preClose' : 'onClose', async () => {
    await worker.close();
  });
}
