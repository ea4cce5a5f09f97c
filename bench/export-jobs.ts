/**
 * An export job against the synchronous export of the same search, on the bench catalog (resampled from
 * the real data in ../shared/data; see bench/lib/catalog.ts), in one run, alternating so that machine
 * noise hits both:
 *
 *   npm run bench:export-jobs -- [--size 200000] [--rounds 4] [--format csv]
 *
 * - synchronous: `GET /api/v2/map/export` of a world `bbox` search, the body read to its end by the client;
 * - job: `POST /api/v2/exports` until `GET /api/v2/exports/{id}` says `succeeded` (polled every 20 ms),
 *   then the file through its signed link, read to its end.
 * Both files are checked byte for byte. The server runs in this process (compiled from TypeScript by tsx,
 * as the tests run it); its clients use real sockets.
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { createAccountWithToken } from '../test/helpers/accounts.ts';
import { buildCatalog } from './lib/catalog.ts';
import { root, unlimited } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '4' },
    format: { type: 'string', default: 'csv' },
  },
});
const size = Number(values.size);
const rounds = Number(values.rounds);
const format = values.format!;

const catalog = await buildCatalog({
  size,
  dir: resolve(root, 'var/bench'),
  dataDir: resolve(root, '../shared/data'),
  log: (m) => console.error(m),
});
console.error(
  `catalog: ${catalog.rows.toLocaleString('en')} places (${catalog.realRows.toLocaleString('en')} imported from the real files)${catalog.built ? `, built in ${catalog.seconds.toFixed(0)} s` : ''}`,
);
const db = openDatabase(catalog.url);
const exportsDir = resolve(root, 'var/bench/exports');
const app = await buildApp({
  config: loadConfig({ DATABASE_URL: catalog.url, LOG_LEVEL: 'silent', EXPORT_DATA_DIR: exportsDir, ...unlimited }),
  db,
});
const base = await app.listen({ host: '127.0.0.1', port: 0 });
const account = await createAccountWithToken(db, { scopes: ['search', 'export'] });
const headers = { authorization: account.authorization, 'content-type': 'application/json' };
const search = (await (await fetch(`${base}/api/v2/map/search?bbox=-180,-90,180,90&per_page=1`, { headers })).json()) as {
  search_id: string;
  total: number;
};

async function body(res: Response): Promise<Buffer> {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

async function synchronous(): Promise<{ seconds: number; file: Buffer }> {
  const t0 = performance.now();
  const file = await body(await fetch(`${base}/api/v2/map/export?search_id=${search.search_id}&format=${format}`, { headers }));
  return { seconds: (performance.now() - t0) / 1000, file };
}

async function job(): Promise<{ ready: number; seconds: number; file: Buffer }> {
  const t0 = performance.now();
  const created = (await (
    await fetch(`${base}/api/v2/exports`, { method: 'POST', headers, body: JSON.stringify({ search_id: search.search_id, format }) })
  ).json()) as { id: string };
  let state: { status: string; download: { url: string } | null; failure: string | null };
  for (;;) {
    state = (await (await fetch(`${base}/api/v2/exports/${created.id}`, { headers })).json()) as typeof state;
    if (state.status === 'succeeded' || state.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  if (state.status !== 'succeeded') throw new Error(`job failed: ${state.failure}`);
  const ready = (performance.now() - t0) / 1000;
  const file = await body(await fetch(state.download!.url));
  return { ready, seconds: (performance.now() - t0) / 1000, file };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const syncTimes: number[] = [];
const readyTimes: number[] = [];
const jobTimes: number[] = [];
console.error(
  `world search: ${search.total.toLocaleString('en')} places, ${format}, ${rounds} rounds; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
for (let i = 0; i < rounds; i++) {
  const order = i % 2 === 0 ? ['sync', 'job'] : ['job', 'sync'];
  let syncFile: Buffer | undefined;
  let jobFile: Buffer | undefined;
  for (const which of order) {
    if (which === 'sync') {
      const s = await synchronous();
      syncTimes.push(s.seconds);
      syncFile = s.file;
    } else {
      const j = await job();
      readyTimes.push(j.ready);
      jobTimes.push(j.seconds);
      jobFile = j.file;
    }
  }
  if (!syncFile!.equals(jobFile!)) throw new Error(`round ${i + 1}: the job's file differs from the synchronous export`);
  console.error(
    `round ${i + 1}: synchronous ${syncTimes.at(-1)!.toFixed(2)} s; job ready ${readyTimes.at(-1)!.toFixed(2)} s, downloaded ${jobTimes.at(-1)!.toFixed(2)} s; ${(syncFile!.length / 1e6).toFixed(1)} MB, equal`,
  );
}
const sync = median(syncTimes);
console.log(
  JSON.stringify(
    {
      places: search.total,
      format,
      rounds,
      synchronousSeconds: sync,
      jobReadySeconds: median(readyTimes),
      jobWithDownloadSeconds: median(jobTimes),
      jobReadyRatio: median(readyTimes) / sync,
      jobWithDownloadRatio: median(jobTimes) / sync,
      loadAverage: loadavg(),
    },
    null,
    2,
  ),
);
await app.close();
await db.close();
