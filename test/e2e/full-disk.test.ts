import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { runCli, runCliAsync } from '../helpers/cli.ts';
import { type DrillInstallation, prepareInstallation, type RunningServer, startServer } from '../helpers/crash-drill.ts';
import { startDnsServer } from '../helpers/dns-server.ts';
import { fillDisk } from '../helpers/fill-disk.ts';

/**
 * A full disk (issue 37): the database, the export files and the backups of an installation on a tmpfs the
 * test mounts (as root), filled to the last byte while `serve` runs. Writes answer 507 naming the path,
 * reads go on, `/readyz` says the disk is full, export and match jobs fail naming the disk and leave no
 * partial file, a backup, an import and an enrichment run stop with the same sentence (exit 74), the
 * database passes `PRAGMA integrity_check`, and all of it works again once the filler file is removed.
 */
const dir = mkdtempSync(join(tmpdir(), 'leadatlas-full-disk-'));
const disk = join(dir, 'disk');
mkdirSync(disk);
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', disk], { encoding: 'utf8' });
const skip =
  mounted.status === 0 ? false : `a tmpfs cannot be mounted here (${(mounted.stderr || mounted.error?.message || '').trim()}): run as root`;
const michelin = resolve(import.meta.dirname, '../../../shared/data/places/michelin-guide-2022-6510.csv.gz');
let installation: DrillInstallation | undefined;
let server: RunningServer | undefined;
let dns: Awaited<ReturnType<typeof startDnsServer>> | undefined;

after(async () => {
  server?.child.kill('SIGKILL');
  if (server) await new Promise((r) => server!.child.once('exit', r));
  await installation?.close();
  await dns?.close();
  if (!skip) spawnSync('umount', [disk]);
  rmSync(dir, { recursive: true, force: true });
});

interface Problem {
  status: number;
  reason?: string;
  path?: string;
  needed_bytes?: number;
  detail: string;
  checks?: Record<string, string>;
}

test('on a full disk writes answer 507 naming the path, reads are served, backup, import, enrichment and match job stop cleanly, and everything resumes once there is room', {
  skip,
  timeout: 240_000,
}, async () => {
  installation = await prepareInstallation(disk, { DISK_MIN_FREE_MB: '4' });
  const env = installation.env;
  server = await startServer(env);
  const headers = { authorization: installation.authorization, 'content-type': 'application/json' };
  const get = (path: string) => fetch(`${server!.base}${path}`, { headers, signal: AbortSignal.timeout(30_000) });
  const post = (path: string, body: unknown) =>
    fetch(`${server!.base}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  /** A list of a few thousand accounts, uploaded as a match job. */
  const uploadList = () => {
    const form = new FormData();
    const rows = Array.from({ length: 3000 }, (_, i) => `"Account ${i} GmbH",München,DE`).join('\n');
    form.append('file', new Blob([`name,city,country\n${rows}\n`], { type: 'text/csv' }), 'accounts.csv');
    return fetch(`${server!.base}/api/v2/match/jobs`, {
      method: 'POST',
      headers: { authorization: installation!.authorization },
      body: form,
      signal: AbortSignal.timeout(30_000),
    });
  };
  const matchJobEnd = async (id: string) => {
    let state: { status: string; failure: string | null } = { status: 'queued', failure: null };
    for (let i = 0; i < 600 && (state.status === 'queued' || state.status === 'running'); i++) {
      await sleep(100);
      state = (await (await get(`/api/v2/match/jobs/${id}`)).json()) as typeof state;
    }
    return state;
  };
  const first = (await (await get('/api/v2/map/search?type=restaurant&city=M%C3%BCnchen&per_page=5')).json()) as {
    search_id: string;
    total: number;
    links: { next: string };
  };
  assert.ok(first.total > 5, JSON.stringify(first));
  assert.equal((await get('/readyz')).status, 200);
  // The places an enrichment crawls: their sites' names answer NXDOMAIN from a DNS server of the test's own,
  // so a crawl is quick and offline, and still records every site's outcome in the database.
  const enrichSearch = (await (await get('/api/v2/map/search?type=bakery&city=M%C3%BCnchen&per_page=5')).json()) as { search_id: string };
  dns = await startDnsServer({});
  const enrichEnv = { ...env, ENRICH_DNS_SERVERS: dns.address, ENRICH_ALLOW_PRIVATE_NETWORKS: 'true', ENRICH_CONCURRENCY: '8' };

  const filler = join(disk, 'filler');
  fillDisk(filler);

  const ready = await get('/readyz');
  assert.equal(ready.status, 503);
  const notReady = (await ready.json()) as Problem & { disks: { path: string }[] };
  assert.equal(notReady.reason, 'disk_full');
  assert.equal(notReady.checks?.disk, 'full');
  assert.ok(
    notReady.disks.some((d) => d.path === disk),
    notReady.detail,
  );

  // The write-ahead log may take a few small writes in room it already has; large ones find the disk full.
  let refused: Problem | undefined;
  for (let i = 0; i < 40 && !refused; i++) {
    const res =
      i % 2 === 0
        ? await post('/api/v1/user-api/suppressions', { entries: Array.from({ length: 5000 }, (_, k) => `full-${i}-${k}@example.com`) })
        : await get(`/api/v2/map/search?bbox=11.5,48.1,11.6,${(48.15 + i / 1000).toFixed(3)}&per_page=5`);
    assert.ok(
      res.status < 300 || res.status === 507,
      `a write on a full disk answers 2xx or 507, not ${res.status}: ${await res.clone().text()}`,
    );
    if (res.status === 507) {
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      refused = (await res.json()) as Problem;
    }
  }
  assert.ok(refused, 'a write found the disk full');
  assert.equal(refused.reason, 'disk_full');
  assert.ok(refused.path?.startsWith(disk), `the problem names the path: ${refused.detail}`);
  assert.ok((refused.needed_bytes ?? 0) > 0);
  assert.match(refused.detail, /is full.*free at least/);

  // Reads go on.
  const next = new URL(first.links.next, 'http://x');
  assert.equal((await get(`${next.pathname}${next.search}`)).status, 200, 'the next page of a saved search');
  assert.equal((await get('/api/v2/countries')).status, 200);
  assert.equal((await get('/api/v2/exports')).status, 200);

  // An export job either is refused (507) or fails naming the path, leaving no file behind.
  const job = await post('/api/v2/exports', { search_id: first.search_id, format: 'csv' });
  assert.ok(job.status === 202 || job.status === 201 || job.status === 507, `export job: ${job.status}`);
  if (job.status !== 507) {
    const { id } = (await job.json()) as { id: string };
    let state: { status: string; failure: string | null } = { status: 'queued', failure: null };
    for (let i = 0; i < 200 && (state.status === 'queued' || state.status === 'running'); i++) {
      await sleep(100);
      state = (await (await get(`/api/v2/exports/${id}`)).json()) as typeof state;
    }
    if (state.status === 'failed') assert.match(state.failure ?? '', /^insufficient_storage: .*is full/);
  }
  // So does a match job: its upload is refused (507), or the job fails naming the disk.
  const matchJob = await uploadList();
  assert.ok(matchJob.status === 202 || matchJob.status === 201 || matchJob.status === 507, `match job: ${matchJob.status}`);
  if (matchJob.status === 507) assert.equal(((await matchJob.json()) as Problem).reason, 'disk_full');
  else {
    const ended = await matchJobEnd(((await matchJob.json()) as { id: string }).id);
    if (ended.status === 'failed') assert.match(ended.failure ?? '', /^insufficient_storage: .*is full/);
  }

  // A backup and an import stop with the same sentence and leave nothing half-written.
  const backup = runCli(['db', 'backup', join(disk, 'backup.db')], env);
  assert.equal(backup.status, 74, backup.stderr);
  assert.match(backup.stderr, new RegExp(`the disk holding ${disk} is full.*free at least`));
  assert.deepEqual(
    readdirSync(disk).filter((n) => n.startsWith('backup.db')),
    [],
    'no backup file, no partial file',
  );
  const imported = runCli(['import', michelin], env);
  assert.equal(imported.status, 74, imported.stderr);
  assert.match(imported.stderr, /the disk holding .* is full/);

  // An enrichment job is refused (507) or queued; an enrichment run stops with the same sentence (exit 74).
  const enrichJob = await post('/api/v2/enrichments', { search_id: enrichSearch.search_id });
  assert.ok(enrichJob.status === 202 || enrichJob.status === 201 || enrichJob.status === 507, `enrichment job: ${enrichJob.status}`);
  if (enrichJob.status === 507) assert.equal(((await enrichJob.json()) as Problem).reason, 'disk_full');
  const enrichedOnFull = await runCliAsync(['enrich', '--search', enrichSearch.search_id], enrichEnv);
  assert.equal(enrichedOnFull.status, 74, enrichedOnFull.stderr);
  assert.match(enrichedOnFull.stderr, new RegExp(`the disk holding ${disk}/leadatlas\\.db is full.*free at least`));

  const integrity = () => {
    const check = new SQLite(join(disk, 'leadatlas.db'), { readonly: true });
    try {
      return check.pragma('integrity_check', { simple: true });
    } finally {
      check.close();
    }
  };
  assert.equal(integrity(), 'ok');
  // The export and match jobs that met the full disk left no partial file (a download link exists only for a
  // job that succeeded, whose file was renamed into place once whole).
  const exportFiles = existsSync(env.EXPORT_DATA_DIR!) ? readdirSync(env.EXPORT_DATA_DIR!, { recursive: true }).map(String) : [];
  assert.deepEqual(
    exportFiles.filter((n) => n.endsWith('.tmp')),
    [],
    'no partial export or match file',
  );

  // Room again: everything resumes without a restart.
  rmSync(filler);
  assert.equal((await get('/readyz')).status, 200);
  assert.equal((await post('/api/v1/user-api/suppressions', { entries: ['after-the-disk@example.com'] })).status < 300, true);
  const again = await get('/api/v2/map/search?type=bar&city=M%C3%BCnchen&per_page=5');
  assert.equal(again.status, 200);
  const resumed = (await (await post('/api/v2/exports', { search_id: first.search_id, format: 'csv' })).json()) as { id: string };
  let state: { status: string; rows: number } = { status: 'queued', rows: 0 };
  for (let i = 0; i < 300 && state.status !== 'succeeded' && state.status !== 'failed'; i++) {
    await sleep(100);
    state = (await (await get(`/api/v2/exports/${resumed.id}`)).json()) as typeof state;
  }
  assert.equal(state.status, 'succeeded');
  assert.equal(state.rows, first.total);
  const matchAgain = await uploadList();
  assert.ok(matchAgain.status < 300, `match job: ${matchAgain.status}`);
  assert.equal((await matchJobEnd(((await matchAgain.json()) as { id: string }).id)).status, 'succeeded');
  const enrichJobAgain = await post('/api/v2/enrichments', { search_id: enrichSearch.search_id });
  assert.ok(enrichJobAgain.status < 300, `enrichment job: ${enrichJobAgain.status} ${await enrichJobAgain.clone().text()}`);
  const enrichedAgain = await runCliAsync(['enrich', '--search', enrichSearch.search_id], enrichEnv);
  assert.equal(enrichedAgain.status, 0, enrichedAgain.stderr);
  // The job's progress is what the server reads from the queue every few seconds.
  const enrichJobId = ((await enrichJobAgain.json()) as { id: string }).id;
  let enrichState: { status: string; sites: number; sites_done: number } = { status: 'running', sites: 0, sites_done: 0 };
  for (let i = 0; i < 300 && enrichState.status !== 'succeeded' && enrichState.status !== 'failed'; i++) {
    await sleep(100);
    enrichState = (await (await get(`/api/v2/enrichments/${enrichJobId}`)).json()) as typeof enrichState;
  }
  assert.equal(enrichState.status, 'succeeded', `every site crawled: ${JSON.stringify(enrichState)}\n${enrichedAgain.stderr}`);
  assert.ok(enrichState.sites > 0 && enrichState.sites_done === enrichState.sites);
  const backupAgain = runCli(['db', 'backup', join(disk, 'backup.db')], env);
  assert.equal(backupAgain.status, 0, backupAgain.stderr);
  assert.ok(existsSync(join(disk, 'backup.db')));
  assert.equal(integrity(), 'ok');
});
