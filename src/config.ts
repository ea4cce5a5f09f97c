import { availableParallelism } from 'node:os';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { maxRouteCost } from './infra/ratelimit/costs.ts';

const count = (fallback: number, minimum: number, description: string) =>
  Type.Integer({ default: fallback, minimum, maximum: 1_000_000_000_000, description });

/**
 * Every setting the process reads from its environment, parsed and validated once at start-up.
 * Tests build a Config with `loadConfig({...})` instead of mutating process.env.
 */
export const ConfigSchema = Type.Object({
  DATABASE_URL: Type.String({
    default: 'sqlite:./var/leadatlas.db',
    pattern: '^(sqlite:|postgres://|postgresql://)',
    description: 'sqlite:PATH (embedded default, `sqlite::memory:` for tests) or postgres://user@host:port/db',
  }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  WEB_CONCURRENCY: Type.Integer({
    default: availableParallelism(),
    minimum: 1,
    maximum: 64,
    description:
      'server processes of `serve`, sharing the port (node:cluster), each with its own search index; one of them runs the background work. Default: the number of cores',
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  LOG_FORMAT: Type.Optional(
    Type.Union([Type.Literal('pretty'), Type.Literal('json')], {
      description: 'pretty: readable lines; json: one object a line. Default: pretty on a terminal, else json',
    }),
  ),
  DEMO_DATA_DIR: Type.String({ default: './data/osm', description: 'imported on first start when the catalog is empty' }),
  IMPORT_DEMO_DATA: Type.Boolean({ default: true }),
  DB_READ_WORKERS: Type.Integer({
    default: 2,
    minimum: 0,
    maximum: 32,
    description: 'threads for read queries; 0 runs them on the event loop',
  }),
  READ_CACHE_ENTRIES: Type.Integer({
    default: 256,
    minimum: 0,
    maximum: 100_000,
    description: 'search pages, totals and reference counts remembered until the catalog changes; 0 turns the cache off',
  }),
  SEARCH_TIME_BUDGET_MS: Type.Integer({
    default: 5000,
    minimum: 1,
    maximum: 600_000,
    description:
      'milliseconds the reads of one search may take; past it the statement is stopped and the search answers 503 time_budget_exceeded',
  }),
  SEARCH_ENGINE: Type.Union([Type.Literal('memory'), Type.Literal('sql')], {
    default: 'memory',
    description:
      'memory: searches the index holds (type, city, country, boolean filters, rating, open/closed, full text, geography, sort by distance or name) are answered from compressed bitmaps in memory, the rest by SQL; sql: every search by SQL',
  }),
  SEARCH_ENGINE_POLL_MS: Type.Integer({
    default: 250,
    minimum: 10,
    maximum: 60_000,
    description: 'how often the in-memory index checks the places version and applies the change log',
  }),
  SEARCH_INDEX_SNAPSHOT: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'file the in-memory index starts from, written after each build from the database (docs/operations.md). Default: beside the SQLite file (`FILE.search-index`), `./var/search-index.snapshot` for PostgreSQL; `off`: none',
    }),
  ),
  SEARCH_TYPO_CANDIDATES: Type.Integer({
    default: 10_000,
    minimum: 1,
    maximum: 100_000,
    description:
      'places a typo-tolerant search checks at most; a search with more candidates does not tolerate typos and says so (resolved.typos)',
  }),
  OPENING_HOURS_WINDOW_DAYS: Type.Integer({
    default: 42,
    minimum: 1,
    maximum: 366,
    description:
      'days ahead for which the opening-hours pass computes when each schedule is open (open_now, open_at); open_at beyond is refused naming the range',
  }),
  TRUST_POLL_MS: Type.Integer({
    default: 5000,
    minimum: 0,
    maximum: 3_600_000,
    description:
      'How often `serve` judges the contacts of the places changed since its last pass (docs/trust.md): statuses, confidences, `lead_score`. 0: never (`leadatlas trust` does it)',
  }),
  OPENING_HOURS_CHECK_MS: Type.Integer({
    default: 5000,
    minimum: 0,
    maximum: 3_600_000,
    description:
      'how often (ms) the server checks the opening-hours tables against the catalog and the day, running the pass in the background when they are behind; 0: never (the pass then runs when a read needs it, or by `leadatlas hours`)',
  }),
  EXPORT_IDLE_TIMEOUT: Type.Integer({
    default: 60,
    minimum: 1,
    maximum: 3600,
    description: 'seconds an export may wait for its client to take a byte before the connection is cut',
  }),
  SHUTDOWN_TIMEOUT: Type.Integer({
    default: 30,
    minimum: 0,
    maximum: 3600,
    description: 'seconds a stopping server (SIGTERM) lets requests in flight, streaming exports included, finish before it cuts them',
  }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_KEY_PREFIX: Type.String({
    default: 'leadatlas:rl:',
    minLength: 1,
    maxLength: 100,
    description: 'prefix of the rate-limit keys in Redis, for deployments sharing one Redis',
  }),
  RATE_LIMIT_TOKEN_PER_MINUTE: count(
    1200,
    maxRouteCost,
    'units a token may spend per minute (a search costs 2, an export 20, a cheap call 1), all at once or spread',
  ),
  RATE_LIMIT_IP_PER_MINUTE: count(300, 1, 'requests per minute and IP without a valid token: pages, /docs, /healthz, refused calls'),
  SIGNUP_LIMIT_PER_IP_PER_HOUR: count(5, 1, 'sign-ups per hour from one IP'),
  SIGNUP_LIMIT_PER_HOUR: count(100, 1, 'sign-ups per hour in all'),
  QUOTA_REQUESTS_PER_DAY: count(10_000, 0, 'default API requests per account and UTC day'),
  QUOTA_EXPORT_ROWS_PER_MONTH: count(100_000, 0, 'default exported rows per account and calendar month (UTC)'),
  QUOTA_CONCURRENT_EXPORTS: count(2, 0, 'default exports running at once per account'),
  DISK_MIN_FREE_MB: count(
    64,
    0,
    'MB that must stay free beside the SQLite database and the export files: below it /readyz says the disk is full, and a write that finds the disk full asks for that much',
  ),
  EXPORT_DATA_DIR: Type.String({ default: './var/exports', minLength: 1, description: 'where export jobs write their files' }),
  EXPORT_LINK_TTL: Type.Integer({
    default: 86_400,
    minimum: 1,
    maximum: 31_536_000,
    description: 'seconds a signed download link of an export job stays valid',
  }),
  EXPORT_LINK_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      maxLength: 512,
      description: 'HMAC key of the download links; when unset, one is made on first use and kept in the database (shared by every node)',
    }),
  ),
  EXPORT_JOBS_PER_SERVER: Type.Integer({
    default: 2,
    minimum: 0,
    maximum: 64,
    description: 'export jobs this process runs at once (0: this node runs none)',
  }),
  EXPORT_JOB_LEASE: Type.Integer({
    default: 30,
    minimum: 1,
    maximum: 3600,
    description: "seconds a running job's lease lasts without renewal; a job whose process died is started again once its lease has lapsed",
  }),
  EXPORT_JOB_ROWS_PER_SECOND: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 100_000_000,
    description: 'paces each export job to this many rows a second, so jobs leave the disk and CPU to the API; 0: no pacing',
  }),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: Type.Boolean({
    default: false,
    description:
      'let webhooks reach private, loopback, link-local and other non-public addresses (an intranet receiver, tests); off, such deliveries are refused',
  }),
  WEBHOOK_MAX_ATTEMPTS: Type.Integer({
    default: 8,
    minimum: 1,
    maximum: 30,
    description: 'attempts of a webhook delivery before it is given up',
  }),
  WEBHOOK_RETRY_BASE_MS: Type.Integer({
    default: 30_000,
    minimum: 1,
    maximum: 3_600_000,
    description: "wait before a webhook's second attempt; doubled for each further attempt (at most a day)",
  }),
  FOLLOW_TIMEOUT_MS: Type.Integer({
    default: 60_000,
    minimum: 100,
    maximum: 600_000,
    description: '`leadatlas follow`: a request to the replication feed without a full answer within this time has failed',
  }),
  FOLLOW_MAX_FILE_BYTES: Type.Integer({
    default: 512 * 1024 * 1024,
    minimum: 1024,
    maximum: 16 * 1024 * 1024 * 1024,
    description: '`leadatlas follow`: the largest change file read, compressed and decompressed alike; a larger one stops the follower',
  }),
  FOLLOW_POLL_SECONDS: Type.Integer({
    default: 60,
    minimum: 1,
    maximum: 86_400,
    description: '`leadatlas follow`: seconds between two reads of the feed state once caught up',
  }),
  FOLLOW_RETRY_BASE_MS: Type.Integer({
    default: 1000,
    minimum: 1,
    maximum: 600_000,
    description: '`leadatlas follow`: first wait after a failed request to the feed, doubled each failure up to 64 times it',
  }),
  MONITORS_PER_ACCOUNT: Type.Integer({
    default: 100,
    minimum: 0,
    maximum: 1_000_000,
    description: 'monitors an account may have (POST /api/v2/monitors answers 409 past it)',
  }),
  MONITOR_MAX_PLACES: Type.Integer({
    default: 10_000,
    minimum: 1,
    maximum: 1_000_000,
    description: 'places a monitored search may hold when the monitor is made; a broader search is refused (narrow it)',
  }),
  MONITOR_EVALUATOR: Type.Union([Type.Literal('serve'), Type.Literal('off')], {
    default: 'serve',
    description:
      'where monitors are evaluated: `serve` (each server, on its main thread) or `off` (not in `serve`: the installation runs `leadatlas monitors`, a process of its own)',
  }),
  MONITOR_POLL_MS: Type.Integer({
    default: 2000,
    minimum: 10,
    maximum: 3_600_000,
    description:
      'how often the evaluator (`serve`, or `leadatlas monitors`) checks whether places changed since its monitors were evaluated',
  }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({
    default: 10_000,
    minimum: 100,
    maximum: 120_000,
    description: 'a webhook attempt without a full answer within this time has failed',
  }),
  ENRICH_WORKERS: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 256,
    description:
      "sites `serve` enriches at once in the background from the enrichment queue (contacts from places' own websites); 0: none (`leadatlas enrich` still runs it)",
  }),
  ENRICH_CONCURRENCY: Type.Integer({
    default: 32,
    minimum: 1,
    maximum: 1024,
    description: "sites `leadatlas enrich` crawls at once; also the crawler's limit of requests in flight",
  }),
  ENRICH_REFRESH_DAYS: Type.Integer({
    default: 90,
    minimum: 1,
    maximum: 3650,
    description: 'days before a crawled site is fetched again (a re-crawl sends If-None-Match / If-Modified-Since)',
  }),
  ENRICH_USER_AGENT: Type.String({
    default: 'LeadAtlasBot/0.1 (+https://leadatlas.dev/bot)',
    minLength: 1,
    maxLength: 300,
    pattern: 'https?://',
    description: 'User-Agent of the enrichment crawler; must name a URL where site owners learn what it does and how to reach you',
  }),
  ENRICH_DNS_SERVERS: Type.Optional(
    Type.String({
      pattern: '^[0-9a-fA-F.:\\[\\]]+(,[0-9a-fA-F.:\\[\\]]+)*$',
      description: "DNS servers (`ip` or `ip:port`, comma-separated) the crawler and the email checks ask; default: the system's resolvers",
    }),
  ),
  ENRICH_ALLOW_PRIVATE_NETWORKS: Type.Boolean({
    default: false,
    description:
      'let the enrichment crawler reach private, loopback and link-local addresses (tests); off, such sites are refused as for webhooks',
  }),
  VERIFY_INTERVAL_MS: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 86_400_000,
    description:
      "How often `serve` re-checks, in the background, the email domains (DNS) and websites (their home page) last checked longer ago than VERIFY_AFTER_DAYS, through the crawler's outbound guard and politeness (docs/trust.md). 0: never (`leadatlas verify` does it)",
  }),
  VERIFY_AFTER_DAYS: Type.Integer({
    default: 30,
    minimum: 0,
    maximum: 3650,
    description: 'Days after which an email domain or a website is checked again by `leadatlas verify` and the VERIFY_INTERVAL_MS loop',
  }),
  VERIFY_BATCH: Type.Integer({
    default: 2000,
    minimum: 1,
    maximum: 1_000_000,
    description: 'Websites and email domains one round of the VERIFY_INTERVAL_MS loop checks at most (each)',
  }),
  VERIFY_CONCURRENCY: Type.Integer({
    default: 256,
    minimum: 1,
    maximum: 4096,
    description:
      "websites `leadatlas verify` and the VERIFY_INTERVAL_MS loop check at once (each a different host: ENRICH_HOST_DELAY_MS spaces one host's requests, so a check is mostly waiting on its host)",
  }),
  ENRICH_HOST_DELAY_MS: Type.Integer({
    default: 1000,
    minimum: 0,
    maximum: 600_000,
    description: 'wait between two requests of the crawler to one host',
  }),
  ENRICH_MAX_PAGES: Type.Integer({
    default: 5,
    minimum: 1,
    maximum: 50,
    description: 'pages the crawler reads per site: the home page and the contact, imprint, about pages it links to',
  }),
  ENRICH_MAX_PAGE_BYTES: Type.Integer({
    default: 2_000_000,
    minimum: 10_000,
    maximum: 50_000_000,
    description: 'bytes the crawler reads of one page (decompressed); a larger page ends the site as too_large',
  }),
  ENRICH_CONNECT_TIMEOUT_MS: Type.Integer({
    default: 5000,
    minimum: 100,
    maximum: 120_000,
    description: "the crawler's wait for a connection",
  }),
  ENRICH_HEADERS_TIMEOUT_MS: Type.Integer({
    default: 10_000,
    minimum: 100,
    maximum: 120_000,
    description: "the crawler's wait for the response headers",
  }),
  ENRICH_BODY_TIMEOUT_MS: Type.Integer({
    default: 20_000,
    minimum: 100,
    maximum: 600_000,
    description: "the crawler's wait for a whole response body",
  }),
  ENRICH_ADDRESS_CONCURRENCY: Type.Integer({
    default: 8,
    minimum: 1,
    maximum: 64,
    description: "email domains of one site checked through DNS at once (a site's first ten addresses are checked)",
  }),
  ENRICH_EXTRACT_THREADS: Type.Integer({
    default: 1,
    minimum: 0,
    maximum: 16,
    description:
      "worker threads that parse crawled pages and extract their contacts, so that the API's requests do not wait behind them; 0: on the main thread",
  }),
  ENRICH_LEASE: Type.Integer({
    default: 60,
    minimum: 5,
    maximum: 3600,
    description:
      'seconds a site being crawled (or an enrichment job being queued) stays held without renewal; one whose process died is taken again after it',
  }),
  ENRICH_NICE: Type.Integer({
    default: 10,
    minimum: 0,
    maximum: 19,
    description:
      "nice value `leadatlas enrich` lowers its CPU priority to (0: left as it is), so that a crawler sharing cores with `serve` yields to the API's requests",
  }),
  QUOTA_ENRICH_PLACES_PER_MONTH: count(
    10_000,
    0,
    'default places per account and calendar month (UTC) that `POST /api/v2/enrichments` may queue',
  ),
  QUOTA_MATCH_ROWS_PER_MONTH: count(100_000, 0, 'default rows of lists per account and calendar month (UTC) that match jobs may match'),
  MATCH_JOBS_PER_SERVER: Type.Integer({
    default: 1,
    minimum: 0,
    maximum: 16,
    description: 'match jobs (`POST /api/v2/match/jobs`) this process runs at once (0: this node runs none)',
  }),
  MATCH_UPLOAD_MAX_BYTES: Type.Integer({
    default: 512 * 1024 * 1024,
    minimum: 1024,
    description: 'largest list a match job takes, in bytes (it is kept in EXPORT_DATA_DIR until the job ends)',
  }),
  TRUST_PROXY: Type.Optional(
    Type.String({
      pattern: '^(true|false|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$',
      description:
        "behind a reverse proxy: the proxies' addresses or CIDRs, comma-separated (or `true` to believe any peer); the client IP in X-Forwarded-For then drives the per-IP limits",
    }),
  ),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
});

export type Config = Static<typeof ConfigSchema>;

/**
 * TRUST_PROXY as Fastify's `trustProxy` option: whom to believe about the client's address. (No hop
 * count: Fastify refuses it, since a count cannot tell the proxy from a client that sends the header.)
 */
export function trustProxyOption(value: string | undefined): boolean | string[] {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  return value.split(',');
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const booleanWords: Record<string, boolean> = { true: true, '1': true, yes: true, false: false, '0': false, no: false };

/** Parses and validates configuration; throws ConfigError naming each bad variable. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(ConfigSchema.properties)) {
    const value = source[key];
    if (value === undefined || value === '') continue;
    const type = (schema as { type?: string }).type;
    if (type === 'integer') raw[key] = /^-?\d+$/.test(value.trim()) ? Number(value) : value;
    else if (type === 'boolean') raw[key] = booleanWords[value.trim().toLowerCase()] ?? value;
    else raw[key] = value;
  }
  const withDefaults = Value.Default(ConfigSchema, raw);
  const errors = [...Value.Errors(ConfigSchema, withDefaults)];
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const name = e.path.replace(/^\//, '');
      return `  ${name}=${JSON.stringify(source[name])}: ${e.message}`;
    });
    throw new ConfigError(`Invalid environment:\n${[...new Set(lines)].join('\n')}`);
  }
  return withDefaults as Config;
}
