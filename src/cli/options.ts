import { InvalidArgumentError } from 'commander';
import { type Config, loadConfig } from '../config.ts';
import { type Bbox, parseBbox } from '../infra/bbox.ts';
import { type Db, openDatabase } from '../infra/db/database.ts';
import { asDiskFull, postgresPath } from '../infra/storage.ts';
import type { HttpReadOptions } from '../modules/importers/importer.types.ts';

/** What the commands write for the operator: progress and results on standard error. */
export const log = (m: string) => console.error(m);

/** Runs `fn` on the configured database, closed afterwards whatever happens; a full disk is said as one (src/infra/storage.ts). */
export async function withDb<T>(fn: (db: Db, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = openDatabase(config.DATABASE_URL);
  try {
    return await fn(db, config);
  } catch (error) {
    throw asDiskFull(error, db.sqlitePath ?? postgresPath, config.DISK_MIN_FREE_MB * 1048576, 'leadatlas stopped');
  } finally {
    await db.close();
  }
}

/**
 * A whole-number option from `min` (to `max` when given): the parser commander calls, with the usage error
 * `a whole number from 1 to 100000`.
 */
export function integerOption(min: number, max?: number): (value: string) => number {
  const allowed = max === undefined ? `a whole number from ${min}` : `a whole number from ${min} to ${max}`;
  return (value) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) throw new InvalidArgumentError(allowed);
    return n;
  };
}

/** `--bbox minLon,minLat,maxLon,maxLat`, checked as the API checks its `bbox` (infra/bbox.ts). */
export function bboxOption(value: string): Bbox {
  const parsed = parseBbox(value);
  if ('problem' in parsed)
    throw new InvalidArgumentError('four numbers minLon,minLat,maxLon,maxLat within -180..180 and -90..90, min before max');
  return parsed.box;
}

/** `--country XX`: an ISO 3166-1 alpha-2 code, upper-cased. */
export function countryOption(value: string): string {
  if (!/^[A-Za-z]{2}$/.test(value)) throw new InvalidArgumentError('an ISO 3166-1 alpha-2 code such as DE or US');
  return value.toUpperCase();
}

/** A number from 0 to 1 (`--min-confidence`). */
export function fractionOption(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('a number from 0 to 1');
  return n;
}

/** An http(s) URL of a publisher's root or a mirror (`--base-url`), with its trailing slash. */
export function urlOption(value: string): string {
  if (!/^https?:\/\/[^/]/i.test(value)) throw new InvalidArgumentError('an http(s) URL');
  return value.endsWith('/') ? value : `${value}/`;
}

/** `--header "Name: value"`, repeatable: headers sent with every request to a publisher. */
export function headerOption(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const m = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+):\s*(.*)$/.exec(value);
  if (!m || /[\r\n]/.test(m[2]!)) throw new InvalidArgumentError('"Name: value", e.g. "Authorization: Bearer TOKEN"');
  return { ...previous, [m[1]!.toLowerCase()]: m[2]! };
}

/** How the URLs of a command are read: `--allow-private-networks` and `--header`. */
export function httpReadOptions(o: { header?: Record<string, string>; allowPrivateNetworks?: boolean }): HttpReadOptions {
  return { allowPrivate: o.allowPrivateNetworks === true, ...(o.header ? { headers: o.header } : {}) };
}

/** The limits of reading a replication feed (FOLLOW_*), as `leadatlas follow` and the OpenStreetMap imports read it. */
export function feedLimits(config: Config): { timeoutMs: number; maxFileBytes: number; retryBaseMs: number } {
  return { timeoutMs: config.FOLLOW_TIMEOUT_MS, maxFileBytes: config.FOLLOW_MAX_FILE_BYTES, retryBaseMs: config.FOLLOW_RETRY_BASE_MS };
}

/**
 * A command that failed in a way its own module knows (a copy that does not match, a feed that cannot be
 * followed): the line to print and the exit code. The command turns its module's error into one, by class.
 */
export class CommandFailure extends Error {
  override name = 'CommandFailure';

  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}
