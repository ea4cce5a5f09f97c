import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { applyOsmChange, datasetToUpdate } from './osm-change.service.ts';
import { type FeedPosition, feedPosition, saveFeedPosition } from './replication.repository.ts';
import { type FeedOptions, ReplicationError, ReplicationFeed, sequencePath, TransientFeedError } from './replication.ts';

export interface FollowOptions extends FeedOptions {
  /** Apply what the feed has now, then return. */
  once?: boolean;
  /** The first change file to apply when the dataset follows no feed yet (default: the feed's next one). */
  from?: number;
  dataset?: string;
  source?: string;
  pollSeconds: number;
  retryBaseMs: number;
  /** How often a passing failure is retried in a row before `--once` gives up. */
  onceRetries?: number;
  log?: (message: string) => void;
  /** Stops the follower between two change files (a file being applied is finished first). */
  signal?: AbortSignal;
}

export interface FollowSummary {
  dataset: string;
  applied: number;
  sequence: number;
}

/**
 * Follows an OpenStreetMap replication feed: applies each change file after the dataset's recorded position,
 * in order, through `applyOsmChange` (the import's change path: enrich, upsert, retire), and records the
 * file's sequence in the transaction that completes its run. A crash in the middle of a file leaves the
 * position before it; the file is applied again on restart, which completes it (its application is
 * idempotent: unchanged places are not rewritten, retired ones stay retired), so no file is lost or counts
 * twice. Every file is read whole, decompressed and parsed before anything of it is written: a gap, a
 * corrupt file or a sequence out of order stops the follower (`ReplicationError`) with the catalog as the
 * last whole file left it. Network failures are retried with a doubling wait.
 */
export async function followFeed(db: Db, url: string, options: FollowOptions): Promise<FollowSummary> {
  const feed = new ReplicationFeed(url, options);
  const source = options.source ?? 'osm';
  const dataset = await datasetToUpdate(db, source, options.dataset);
  const log = options.log ?? (() => {});
  let position = await feedPosition(db, dataset);
  if (position && position.url !== feed.url)
    throw new AppError('validation_failed', `dataset ${dataset} follows ${position.url}: another feed numbers its files otherwise`, {
      errors: [{ field: 'url', message: 'not the feed this dataset follows', allowed: [position.url] }],
    });
  if (position && options.from !== undefined && options.from !== position.sequence + 1)
    throw new AppError(
      'validation_failed',
      `dataset ${dataset} is at change file ${position.sequence}: --from only starts a dataset that follows no feed`,
      {
        errors: [{ field: 'from', message: 'the dataset already follows the feed', allowed: [position.sequence + 1] }],
      },
    );
  let applied = 0;
  let failures = 0;
  const work = await mkdtemp(join(tmpdir(), 'leadatlas-follow-'));
  try {
    while (!options.signal?.aborted) {
      try {
        const remote = await feed.state();
        if (!position) position = await startPosition(db, { dataset, source, url: feed.url }, remote, options.from, log);
        if (remote.sequence < position.sequence)
          throw new ReplicationError(
            `sequence out of order: the feed is at ${remote.sequence}, behind change file ${position.sequence} already applied`,
          );
        while (position.sequence < remote.sequence && !options.signal?.aborted) {
          position = await applyNext(db, feed, position, work, log);
          applied++;
          failures = 0;
        }
        if (options.once) break;
        await sleep(options.pollSeconds * 1000, undefined, { signal: options.signal }).catch(() => {});
      } catch (error) {
        if (!(error instanceof TransientFeedError)) throw error;
        failures++;
        if (options.once && failures > (options.onceRetries ?? 3)) throw error;
        const wait = options.retryBaseMs * 2 ** Math.min(failures - 1, 6);
        log(`${error.message}: trying again in ${wait} ms`);
        await sleep(wait, undefined, { signal: options.signal }).catch(() => {});
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { dataset, applied, sequence: position?.sequence ?? 0 };
}

/**
 * Where a dataset that follows no feed yet starts: before `--from`, or at the feed's newest file (the extract is
 * taken to be as new as the feed; recorded at once, so the next run starts there too).
 */
async function startPosition(
  db: Db,
  about: Pick<FeedPosition, 'dataset' | 'source' | 'url'>,
  remote: { sequence: number; timestamp: string },
  from: number | undefined,
  log: (message: string) => void,
): Promise<FeedPosition> {
  if (from !== undefined) {
    if (from > remote.sequence + 1) throw new ReplicationError(`--from ${from} is past the feed's newest change file (${remote.sequence})`);
    return { ...about, sequence: from - 1, timestamp: '' };
  }
  const position = { ...about, ...remote };
  await db.kysely.transaction().execute((trx) => saveFeedPosition(trx, position, new Date().toISOString()));
  log(`${about.dataset} follows ${about.url} from change file ${remote.sequence + 1} on (pass --from N to start elsewhere)`);
  return position;
}

/** Reads, checks and applies the change file after `position`; returns the new position. */
async function applyNext(
  db: Db,
  feed: ReplicationFeed,
  position: FeedPosition,
  work: string,
  log: (message: string) => void,
): Promise<FeedPosition> {
  const sequence = position.sequence + 1;
  const { state, osc } = await feed.changeFile(sequence);
  if (position.timestamp !== '' && Date.parse(state.timestamp) < Date.parse(position.timestamp))
    throw new ReplicationError(
      `sequence out of order: change file ${sequence} is dated ${state.timestamp}, before change file ${position.sequence} (${position.timestamp})`,
    );
  const next: FeedPosition = { ...position, sequence, timestamp: state.timestamp };
  const file = join(work, `${sequence}.osc`);
  await writeFile(file, osc);
  const started = Date.now();
  try {
    const { run } = await applyOsmChange(db, file, {
      dataset: position.dataset,
      source: position.source,
      runPath: `${feed.url}${sequencePath(sequence)}.osc.gz`,
      onFinish: (trx) => saveFeedPosition(trx, next, new Date().toISOString()),
    });
    const c = run.counters;
    log(
      `${position.dataset}: change file ${sequence} (${state.timestamp}) applied in ${Date.now() - started} ms: ` +
        `${c.imported_count} new, ${c.updated_count} changed, ${run.retired} retired`,
    );
  } catch (error) {
    // The parser refuses the file before anything of it is written.
    if (error instanceof AppError && error.extras.errors?.[0]?.field === 'file')
      throw new ReplicationError(`corrupt change file ${sequence}: ${error.message}`);
    throw error;
  } finally {
    await rm(file, { force: true });
  }
  return next;
}
