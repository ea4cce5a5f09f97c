import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { DownloadLinks } from '../exports/download-links.ts';
import type { Search } from '../search/search.ts';
import { matchDepsOf } from './match.service.ts';
import { HeaderDictionary } from './match-headers.ts';
import { MatchJobRunner } from './match-jobs.runner.ts';
import type { MatchAllowance } from './match-jobs.service.ts';

/** Where match jobs are read and downloaded. */
export const matchJobsPath = '/api/v2/match/jobs';

/** The match jobs of one process: their download links, their runner, and the header dictionary, built on first use. */
export interface MatchJobs {
  links: DownloadLinks;
  runner: MatchJobRunner;
  dictionary(): HeaderDictionary;
  start(): void;
  close(): Promise<void>;
}

/**
 * Wires match jobs into a process, on the export jobs' pieces: the same signing key for their links (under
 * their own path), the same data directory, and their end told through the export jobs' webhook queue
 * (`onEvent`: the dispatcher's poke).
 */
export function createMatchJobs(o: {
  db: Db;
  config: Config;
  log: FastifyBaseLogger;
  search: Pick<Search, 'db' | 'places'>;
  allowance: MatchAllowance;
  onEvent: () => void;
  pollMs?: number;
}): MatchJobs {
  const { db, config, log } = o;
  const links = new DownloadLinks(db, config, matchJobsPath);
  const runner = new MatchJobRunner({
    db,
    log,
    deps: matchDepsOf(o.search),
    allowance: o.allowance,
    links,
    onEvent: o.onEvent,
    dataDir: config.EXPORT_DATA_DIR,
    minFreeBytes: config.DISK_MIN_FREE_MB * 1048576,
    perServer: config.MATCH_JOBS_PER_SERVER,
    leaseSeconds: config.EXPORT_JOB_LEASE,
    baseUrl: config.PUBLIC_URL?.replace(/\/$/, '') ?? '',
    pollMs: o.pollMs,
  });
  let dictionary: HeaderDictionary | undefined;
  return {
    links,
    runner,
    dictionary: () => {
      dictionary ??= HeaderDictionary.build();
      return dictionary;
    },
    start: () => runner.start(),
    close: () => runner.close(),
  };
}
