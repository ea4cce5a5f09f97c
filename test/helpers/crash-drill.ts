import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/infra/db/database.ts';
import { createAccountWithToken } from './accounts.ts';
import { freePort, runCli, spawnCli } from './cli.ts';
import { munichExtract } from './exports.ts';
import { copySqliteTemplate } from './templates.ts';

/**
 * The crash drill of issue 37, shared by test/e2e/crash-drill.test.ts (one or two repetitions) and
 * bench/crash-drill.ts (twenty): `leadatlas serve` as a child process under a load that writes (searches
 * saved, suppressions added, export jobs with webhooks to a receiver on loopback, monitors), killed with
 * SIGKILL at a random moment, started again on the same database and data directory, and checked: every
 * write it had answered with a 2xx is there, every export job ends (succeeded, or failed with a reason),
 * every job's webhook reaches the receiver at least once and always with the same delivery id, and a
 * download serves the whole file.
 */

export interface WebhookReceiver {
  url: string;
  /** Delivery ids (`LeadAtlas-Delivery`) received per export job id, in arrival order. */
  byJob: Map<string, string[]>;
  close(): Promise<void>;
}

async function webhookReceiver(): Promise<WebhookReceiver> {
  const byJob = new Map<string, string[]>();
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const job = /"(job_[A-Za-z0-9_-]+)"/.exec(Buffer.concat(parts).toString('utf8'))?.[1] ?? 'unknown';
      const seen = byJob.get(job) ?? [];
      seen.push(String(req.headers['leadatlas-delivery']));
      byJob.set(job, seen);
      res.end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hooks/crash-drill`, byJob, close: () => new Promise((r) => server.close(() => r())) };
}

export interface DrillInstallation {
  env: Record<string, string>;
  authorization: string;
  receiver: WebhookReceiver;
  close(): Promise<void>;
}

/** A SQLite installation in `dir` with Munich's extract, one account and its token, and a webhook receiver. */
export async function prepareInstallation(dir: string, extraEnv: Record<string, string> = {}): Promise<DrillInstallation> {
  await copySqliteTemplate('prepared', join(dir, 'leadatlas.db'));
  const env: Record<string, string> = {
    DATABASE_URL: `sqlite:${join(dir, 'leadatlas.db')}`,
    HOST: '127.0.0.1',
    IMPORT_DEMO_DATA: 'false',
    EXPORT_DATA_DIR: join(dir, 'exports'),
    EXPORT_JOB_LEASE: '2',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_BASE_MS: '200',
    RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000000',
    QUOTA_REQUESTS_PER_DAY: '1000000000',
    QUOTA_EXPORT_ROWS_PER_MONTH: '1000000000',
    QUOTA_CONCURRENT_EXPORTS: '1000',
    MONITORS_PER_ACCOUNT: '1000000',
    // The drills' searches span the whole extract; on a busy host they can pass the default budget (5 s), which
    // is time-budget.test.ts's subject, not a drill's.
    SEARCH_TIME_BUDGET_MS: '60000',
    ...extraEnv,
  };
  const cli = (args: string[]) => {
    const out = runCli(args, env, 300_000);
    assert.equal(out.status, 0, `${args.join(' ')}: ${out.stderr}`);
    return out.stdout;
  };
  cli(['import', munichExtract]);
  // The account and its token are written here rather than by `leadatlas user create` and `token create`:
  // two processes fewer, the same rows (src/modules/auth/auth.cli.test.ts runs those commands).
  const db = openDatabase(env.DATABASE_URL!);
  let authorization: string;
  try {
    ({ authorization } = await createAccountWithToken(db, {
      email: 'drill@example.com',
      scopes: ['places:read', 'search', 'export', 'suppressions:write', 'monitors', 'match', 'enrich'],
    }));
  } finally {
    await db.close();
  }
  const receiver = await webhookReceiver();
  return { env, authorization, receiver, close: () => receiver.close() };
}

export interface RunningServer {
  base: string;
  child: ChildProcess;
  output(): string;
}

/** `leadatlas serve` on a free port, once `/healthz` answers. */
export async function startServer(env: Record<string, string>): Promise<RunningServer> {
  const port = await freePort();
  const child = spawnCli(['serve'], { ...env, PORT: String(port) }, ['ignore', 'ignore', 'pipe']);
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}: ${output}`);
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { base, child, output: () => output };
    if (Date.now() > deadline) throw new Error(`serve did not answer: ${output}`);
    await sleep(100);
  }
}

/** What the killed server had answered with a 2xx. */
export interface Acknowledged {
  searches: Map<string, number>;
  suppressions: string[];
  exportJobs: string[];
  monitors: string[];
}

export interface RepetitionOutcome {
  acknowledged: { searches: number; suppressions: number; exportJobs: number; monitors: number };
  /** Acknowledged writes missing after the restart, each named. */
  lost: string[];
  /** Anything else the drill promises that did not hold: a job stuck or failed without a reason, a webhook missing or with two ids, a short download. */
  problems: string[];
  /** Export jobs that failed, with their reason (allowed, when the reason is given). */
  failedJobs: string[];
  /** When the kill came, after every kind of write had been acknowledged once. */
  killedAfterMs: number;
}

const cityTypes = ['restaurant', 'cafe', 'bar', 'bakery', 'pharmacy', 'hotel', 'supermarket', 'hairdresser'];

/**
 * Writes through the API of `server` with `workers` concurrent clients, kills it with SIGKILL `killAfterMs`
 * after every kind of write has been acknowledged once, and returns what was acknowledged.
 */
async function writeUntilKilled(
  server: RunningServer,
  installation: DrillInstallation,
  tag: string,
  killAfterMs: number,
  workers = 4,
): Promise<Acknowledged> {
  const ack: Acknowledged = { searches: new Map(), suppressions: [], exportJobs: [], monitors: [] };
  const headers = { authorization: installation.authorization, 'content-type': 'application/json' };
  let n = 0;
  const call = async (path: string, body?: unknown): Promise<Record<string, unknown> | null> => {
    const res = await fetch(
      `${server.base}${path}`,
      body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) },
    );
    const text = await res.text();
    if (!res.ok) {
      if (res.status >= 500) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 300)}`);
      return null;
    }
    return JSON.parse(text) as Record<string, unknown>;
  };
  const one = async (worker: number): Promise<void> => {
    const i = n++;
    const searchIds = [...ack.searches.keys()];
    const saved = searchIds[i % Math.max(1, searchIds.length)];
    switch (saved === undefined ? 0 : i % 4) {
      case 0: {
        const type = cityTypes[(i + worker) % cityTypes.length]!;
        const r = await call(`/api/v2/map/search?type=${type}&city=M%C3%BCnchen&per_page=5`);
        if (r) ack.searches.set(String(r.search_id), Number(r.total));
        return;
      }
      case 1: {
        const values = Array.from({ length: 20 }, (_, k) => `drill-${tag}-${i}-${k}@example.com`);
        if (await call('/api/v1/user-api/suppressions', { entries: values })) ack.suppressions.push(...values);
        return;
      }
      case 2: {
        const r = await call('/api/v2/exports', { search_id: saved, format: 'ndjson', webhook_url: installation.receiver.url });
        if (r) ack.exportJobs.push(String(r.id));
        return;
      }
      default: {
        const r = await call('/api/v2/monitors', { search_id: saved });
        if (r) ack.monitors.push(String(r.id));
      }
    }
  };
  const exited = once(server.child, 'exit');
  let killed = false;
  const failures: unknown[] = [];
  const loops = Array.from({ length: workers }, async (_, w) => {
    while (!killed && failures.length === 0) {
      // A request cut by the kill is not acknowledged; anything else before the kill fails the drill.
      await one(w).catch((error: unknown) => killed || failures.push(error));
    }
  });
  // Killed at a random moment once every kind of write has been acknowledged at least once.
  const deadline = Date.now() + 30_000;
  while (failures.length === 0 && Date.now() < deadline && (ack.exportJobs.length === 0 || ack.monitors.length === 0)) await sleep(20);
  await sleep(killAfterMs);
  killed = true;
  server.child.kill('SIGKILL');
  await exited;
  await Promise.all(loops);
  if (failures.length > 0) throw failures[0];
  return ack;
}

/** Polls `check` every 100 ms until it returns a value or `limitMs` passes (then undefined). */
async function within<T>(limitMs: number, check: () => Promise<T | undefined>): Promise<T | undefined> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined || Date.now() > deadline) return value;
    await sleep(100);
  }
}

/**
 * One repetition: load on `server`, kill -9 at a random moment (from `random`), a new server on the same
 * installation, the checks. Returns the new server (the next repetition's) and what was found.
 */
export async function crashRepetition(
  installation: DrillInstallation,
  server: RunningServer,
  tag: string,
  random: () => number,
): Promise<{ server: RunningServer; outcome: RepetitionOutcome }> {
  const killedAfterMs = Math.round(random() * 1500);
  const ack = await writeUntilKilled(server, installation, tag, killedAfterMs);
  const next = await startServer(installation.env);
  const lost: string[] = [];
  const problems: string[] = [];
  const failedJobs: string[] = [];
  const db = openDatabase(installation.env.DATABASE_URL!);
  try {
    const k = db.kysely;
    const searchIds = [...ack.searches.keys()];
    const searches = searchIds.length
      ? await k
          .withTables<{ searches: { public_id: string; total: number } }>()
          .selectFrom('searches')
          .select(['public_id', 'total'])
          .where('public_id', 'in', searchIds)
          .execute()
      : [];
    const found = new Map(searches.map((s) => [s.public_id, Number(s.total)]));
    for (const [id, total] of ack.searches) {
      if (!found.has(id)) lost.push(`search ${id}`);
      else if (found.get(id) !== total) problems.push(`search ${id} saved with total ${found.get(id)}, answered ${total}`);
    }
    const values = new Set(
      ack.suppressions.length
        ? (await k.selectFrom('suppressions').select('value').where('value', 'in', ack.suppressions).execute()).map((r) => r.value)
        : [],
    );
    for (const v of ack.suppressions) if (!values.has(v)) lost.push(`suppression ${v}`);
    const monitors = new Set(
      ack.monitors.length
        ? (await k.selectFrom('monitors').select('public_id').where('public_id', 'in', ack.monitors).execute()).map((r) => r.public_id)
        : [],
    );
    for (const m of ack.monitors) if (!monitors.has(m)) lost.push(`monitor ${m}`);

    const headers = { authorization: installation.authorization };
    for (const id of ack.exportJobs) {
      const job = await within(60_000, async () => {
        const res = await fetch(`${next.base}/api/v2/exports/${id}`, { headers });
        if (res.status === 404) return null;
        const j = (await res.json()) as { status: string; rows: number; failure?: string | null; download: { url: string } | null };
        return j.status === 'succeeded' || j.status === 'failed' ? j : undefined;
      });
      if (job === null) {
        lost.push(`export job ${id}`);
        continue;
      }
      if (job === undefined) {
        problems.push(`export job ${id} neither succeeded nor failed within 60 s of the restart`);
        continue;
      }
      if (job.status === 'failed') {
        if (!job.failure) problems.push(`export job ${id} failed without a reason`);
        else failedJobs.push(`${id}: ${job.failure}`);
      } else {
        const body = await (await fetch(job.download!.url)).text();
        const lines = body.split('\n').filter((l) => l.length > 0);
        const whole = lines.length === job.rows && lines.every((l) => l.startsWith('{') && l.endsWith('}'));
        if (!whole) problems.push(`export job ${id}: the download has ${lines.length} lines for ${job.rows} rows`);
      }
      // A delivery in flight at the kill is leased for the outbound timeout + 30 s before it is tried again.
      const ids = await within(90_000, async () => {
        const seen = installation.receiver.byJob.get(id);
        return seen && seen.length > 0 ? seen : undefined;
      });
      if (!ids) problems.push(`export job ${id}: no webhook received`);
      else if (new Set(ids).size !== 1)
        problems.push(`export job ${id}: webhooks with different delivery ids ${[...new Set(ids)].join(', ')}`);
    }
  } finally {
    await db.close();
  }
  return {
    server: next,
    outcome: {
      acknowledged: {
        searches: ack.searches.size,
        suppressions: ack.suppressions.length,
        exportJobs: ack.exportJobs.length,
        monitors: ack.monitors.length,
      },
      lost,
      problems,
      failedJobs,
      killedAfterMs,
    },
  };
}
