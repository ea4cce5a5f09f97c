import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Db } from '../../../infra/db/database.ts';
import { AppError } from '../../../infra/errors.ts';
import { type Box, boxesMeet, countryBoxes } from '../../geo/country-area.ts';
import { closedSeenBy } from '../../places/coverage.repository.ts';
import type { Enricher } from '../enrich.ts';
import { type FollowSummary, followFeed } from '../follow.service.ts';
import { type ImportProgress, type ImportSummary, runImport } from '../import.service.ts';
import type { HttpReadOptions } from '../importer.types.ts';
import { pbfReplication } from '../readers/osm-pbf.ts';
import { feedPosition, saveFeedPosition } from '../replication.repository.ts';
import { asDirectory } from './fetch.ts';
import { FOURSQUARE_BUCKET_URL, foursquareRelease } from './foursquare-release.ts';
import { countryExtract, downloadFile, GEOFABRIK_URL } from './geofabrik.ts';
import { OVERTURE_STAC_URL, overtureRelease, type PublishedRelease, type ReleasePart } from './overture-release.ts';

/**
 * A country (or a box) straight from its publisher: `leadatlas import overture|foursquare|osm --country XX`.
 * Each finds the publisher's latest release (or the one asked for), reads only what can hold the country, keeps
 * the places the country's border holds (`OpenOptions.border`: the gazetteer's country of each place, from
 * country-coder's borders), and imports them as one dataset per publisher and country (`overture-PT`), so the
 * next release retires what it no longer holds. A split release is one resumable run (`ImportOptions.resume`).
 */

export type Publisher = 'overture' | 'foursquare' | 'osm';

export interface PublisherImportOptions {
  /** ISO 3166-1 alpha-2, upper case: the country whose border keeps places. */
  country?: string;
  /** Only the places inside this box (with `country`, inside both). */
  bbox?: Box;
  /** `latest` (default) or a release the publisher names (`2026-04-15.0`, `dt=2026-04-08`); not for OSM. */
  release?: string;
  /** The publisher's root: its public address by default, a mirror's otherwise. */
  baseUrl?: string;
  /** Default `PUBLISHER-XX` (`overture-PT`), or `PUBLISHER-bbox-…` for a box alone. */
  dataset?: string;
  http: HttpReadOptions;
  batchSize?: number;
  conflate?: boolean;
  onProgress?: (progress: ImportProgress) => void;
  log?: (message: string) => void;
  /** Read and enrich on this thread with it (tests), instead of a worker thread per part. */
  enricher?: Enricher;
}

export interface OsmImportOptions extends PublisherImportOptions {
  /** Where the extract is downloaded to (and resumed from after an interruption). */
  cacheDir: string;
  /** The replication feed as `leadatlas follow` reads it. */
  follow: { timeoutMs: number; maxFileBytes: number; retryBaseMs: number };
}

export interface PublisherImport {
  publisher: Publisher;
  dataset: string;
  release: string;
  /** The release's files, and those whose box meets the selection (the others are not opened). */
  parts: { total: number; read: number };
  /** The import run; undefined when the dataset only caught up with its feed (OSM). */
  summary?: ImportSummary;
  /** Places stored (new, changed or unchanged), of which `closed` their source says are closed. */
  kept: number;
  closed: number;
  /** Places the country's border does not hold. */
  outsideBorder: number;
  /** The feed's change files applied after the extract (OSM). */
  followed?: FollowSummary;
}

/** The largest extract downloaded: above the largest country Geofabrik publishes. */
const MAX_EXTRACT_BYTES = 64 * 2 ** 30;

interface Selection {
  dataset: string;
  areas?: Box[];
  bbox?: Box;
  border?: string;
}

function selectionOf(publisher: Publisher, options: PublisherImportOptions): Selection {
  const { country, bbox } = options;
  if (!country && !bbox)
    throw new AppError('validation_failed', `import ${publisher} takes --country or --bbox`, {
      errors: [{ field: 'country', message: 'an ISO 3166-1 alpha-2 code, or --bbox' }],
    });
  const areas = country ? countryBoxes(country) : undefined;
  if (country && !areas)
    throw new AppError('unknown_value', `no border is known for country ${country}`, {
      errors: [{ field: 'country', message: 'not a country of the border data (ISO 3166-1 alpha-2)' }],
    });
  const dataset = options.dataset ?? (country ? `${publisher}-${country}` : `${publisher}-bbox-${bbox!.join('_')}`);
  return { dataset, ...(areas ? { areas, border: country! } : {}), ...(bbox ? { bbox } : {}) };
}

/** The parts whose box meets the selection's (a part without a box is read: its row groups' statistics decide). */
function partsMeeting(release: PublishedRelease, s: Selection): ReleasePart[] {
  return release.parts.filter(
    (p) => !p.bbox || ((!s.areas || s.areas.some((a) => boxesMeet(a, p.bbox!))) && (!s.bbox || boxesMeet(s.bbox, p.bbox))),
  );
}

/** The selection is checked before the publisher is asked for anything. */
async function importRelease(
  db: Db,
  publisher: Publisher,
  find: () => Promise<PublishedRelease>,
  options: PublisherImportOptions,
): Promise<PublisherImport> {
  const s = selectionOf(publisher, options);
  const release = await find();
  const parts = partsMeeting(release, s);
  if (parts.length === 0)
    throw new AppError('not_found', `no file of ${publisher} release ${release.release} holds places of the selection`, {
      errors: [{ field: options.country ? 'country' : 'bbox', message: 'outside every file of the release' }],
    });
  options.log?.(`${publisher} ${release.release}: ${parts.length} of ${release.parts.length} files meet ${options.country ?? 'the box'}`);
  const summary = await runImport(
    db,
    options.enricher ?? null,
    parts.map((p) => p.url),
    {
      format: 'parquet',
      dataset: s.dataset,
      resume: true,
      http: options.http,
      ...(s.areas ? { areas: s.areas, border: s.border! } : {}),
      ...(s.bbox ? { bbox: s.bbox } : {}),
      ...(options.batchSize ? { batchSize: options.batchSize } : {}),
      ...(options.conflate === false ? { conflate: false } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    },
  );
  if (summary.source !== publisher)
    throw new AppError(
      'validation_failed',
      `the files of ${publisher} release ${release.release} are not ${publisher}'s layout but ${summary.source}`,
      {
        errors: [{ field: 'base-url', message: `not a ${publisher} release`, allowed: [publisher] }],
      },
    );
  return {
    publisher,
    dataset: s.dataset,
    release: release.release,
    parts: { total: release.parts.length, read: parts.length },
    ...outcome(summary),
    closed: await closedSeenBy(db, summary.runId),
    summary,
  };
}

const outcome = (s: ImportSummary) => ({
  kept: s.imported_count + s.updated_count + s.unchanged_count,
  outsideBorder: s.skipped_reasons['outside the border'] ?? 0,
});

/** Overture's places through its STAC catalog: only the files, then the row groups, whose box meets the country's. */
export async function importOverture(db: Db, options: PublisherImportOptions): Promise<PublisherImport> {
  return importRelease(
    db,
    'overture',
    () => overtureRelease(options.baseUrl ?? OVERTURE_STAC_URL, options.release ?? 'latest', options.http),
    options,
  );
}

/**
 * Foursquare OS Places from its bucket: the listing gives no box per file, so every file's footer is read and
 * its row groups skipped by their statistics. Rows flagged `privatevenue`, `doesnt_exist`, `delete` or
 * `duplicate` are skipped (`flagged …`), `closed` ones and those with a `date_closed` imported closed.
 */
export async function importFoursquare(db: Db, options: PublisherImportOptions): Promise<PublisherImport> {
  return importRelease(
    db,
    'foursquare',
    () => foursquareRelease(options.baseUrl ?? FOURSQUARE_BUCKET_URL, options.release ?? 'latest', options.http),
    options,
  );
}

/**
 * OpenStreetMap from Geofabrik: the country's extract from the index, downloaded (resumably) and imported with
 * the border kept, then its replication feed followed from the extract's own sequence (its header's
 * `osmosis_replication_sequence_number`), so `leadatlas follow` keeps it fresh with no `--from`. A dataset
 * that already follows its feed is only brought up to date with it: no extract is downloaded again.
 */
export async function importOsm(db: Db, options: OsmImportOptions): Promise<PublisherImport> {
  const s = selectionOf('osm', options);
  if (!options.country)
    throw new AppError('validation_failed', 'import osm takes --country: Geofabrik cuts its extracts by country', {
      errors: [{ field: 'country', message: 'an ISO 3166-1 alpha-2 code' }],
    });
  const extract = await countryExtract(options.baseUrl ?? GEOFABRIK_URL, options.country, options.http);
  let summary: ImportSummary | undefined;
  let position = await feedPosition(db, s.dataset);
  if (!position) {
    const file = join(options.cacheDir, 'geofabrik', `${extract.id}-latest.osm.pbf`);
    options.log?.(`osm: ${extract.name} from ${extract.pbf}`);
    await downloadFile(extract.pbf, file, { http: options.http, maxBytes: MAX_EXTRACT_BYTES });
    summary = await runImport(db, options.enricher ?? null, file, {
      dataset: s.dataset,
      border: s.border!,
      ...(options.batchSize ? { batchSize: options.batchSize } : {}),
      ...(options.conflate === false ? { conflate: false } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    const replication = await pbfReplication(file);
    const feed = extract.updates ?? replication.baseUrl;
    if (feed && replication.sequence !== undefined) {
      position = {
        dataset: s.dataset,
        source: 'osm',
        url: asDirectory(feed),
        sequence: replication.sequence,
        timestamp: replication.timestamp !== undefined ? new Date(replication.timestamp * 1000).toISOString() : '',
      };
      const saved = position;
      await db.kysely.transaction().execute((trx) => saveFeedPosition(trx, saved, new Date().toISOString()));
    } else options.log?.(`osm: ${extract.pbf} names no replication sequence: the extract is not followed`);
    await rm(file, { force: true });
  }
  const followed = position
    ? await followFeed(db, position.url, {
        allowPrivate: options.http.allowPrivate === true,
        ...options.follow,
        pollSeconds: 0,
        once: true,
        dataset: s.dataset,
        ...(options.log ? { log: options.log } : {}),
      })
    : undefined;
  const result: PublisherImport = {
    publisher: 'osm',
    dataset: s.dataset,
    release: position ? `${extract.id} at change file ${followed?.sequence ?? position.sequence}` : extract.id,
    parts: { total: 1, read: summary ? 1 : 0 },
    kept: 0,
    closed: 0,
    outsideBorder: 0,
    ...(followed ? { followed } : {}),
  };
  if (!summary) return result;
  return { ...result, ...outcome(summary), closed: await closedSeenBy(db, summary.runId), summary };
}
