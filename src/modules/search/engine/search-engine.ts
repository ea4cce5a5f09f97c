import { roaringLibraryInitialize } from 'roaring-wasm';
import type { Db } from '../../../infra/db/database.ts';
import type { ReadPool } from '../../../infra/db/read-pool.ts';
import { PollLoop } from '../../../infra/poll-loop.ts';
import { placeChangesSince, prunePlaceChanges } from '../../places/place-changes.repository.ts';
import { placesVersion, type PlaceCriteria, type PlaceKey, type PlaceSort } from '../../places/places.repository.ts';
import type { ApiReadTasks } from '../read-tasks.ts';
import type { PlacePage } from '../search.reads.ts';
import { BitmapIndex, flagNames, type FacetDimension, type FacetValue, type IndexQuery } from './bitmap-index.ts';
import { placeFactsAfter, placeFactsByIds, type PlaceFacts } from './engine.repository.ts';
import { PageRowCache, type PageRow } from './row-cache.ts';

export type { FacetDimension, FacetValue } from './bitmap-index.ts';
export { facetDimensions } from './bitmap-index.ts';

/** What `/readyz` shows of the engine. */
export type EngineState =
  | { engine: 'sql' }
  | {
      engine: 'memory';
      status: 'building' | 'ready' | 'failed';
      version: number | null;
      places: number;
      tail: number;
      builtMs: number | null;
    };

/**
 * The one way search reads places: `search.service.ts` asks the engine, the engine answers from its index
 * or hands the read to SQL (the read pool: `search.reads.ts`).
 */
export interface SearchEngine {
  /** One page in `sort` after `after`, with the exact total (see `searchPage` in search.reads.ts). */
  searchPage(criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number, candidateLimit: number): Promise<PlacePage>;
  countMatches(criteria: PlaceCriteria): Promise<number>;
  /** Exact matches per value of a dimension, largest first. */
  facets(criteria: PlaceCriteria, by: FacetDimension): Promise<FacetValue[]>;
  state(): EngineState;
  /** Builds the index (memory) and starts following the catalog; resolves once the first build is done. */
  start(): Promise<void>;
  close(): Promise<void>;
}

interface EngineOptions {
  db: Db;
  reads: ReadPool<ApiReadTasks>;
  log?: { warn(obj: unknown, msg: string): void; info(obj: unknown, msg: string): void };
  /** Places moved out of the sorted order past which the index is rebuilt (default: 50,000 or 5 % of the index). */
  tailLimit?: (size: number) => number;
}

/** How often the change log is pruned (each node does; it is idempotent). */
const PRUNE_EVERY_MS = 10 * 60 * 1000;

/** Every search by SQL, in the read pool. */
export class SqlSearchEngine implements SearchEngine {
  private pruner: PollLoop | undefined;

  constructor(protected readonly options: EngineOptions) {}

  searchPage(criteria: PlaceCriteria, sort: PlaceSort, after: PlaceKey | null, limit: number, candidateLimit: number): Promise<PlacePage> {
    return this.options.reads.run('searchPage', criteria, sort, after, limit, candidateLimit);
  }

  countMatches(criteria: PlaceCriteria): Promise<number> {
    return this.options.reads.run('countMatches', criteria);
  }

  facets(criteria: PlaceCriteria, by: FacetDimension): Promise<FacetValue[]> {
    return this.options.reads.run('facetCounts', criteria, by);
  }

  state(): EngineState {
    return { engine: 'sql' };
  }

  async start(): Promise<void> {
    this.pruner = new PollLoop(
      async () => {
        await prunePlaceChanges(this.options.db);
      },
      PRUNE_EVERY_MS,
      (error) => this.options.log?.warn({ err: error }, 'pruning the change log of places failed'),
    );
    this.pruner.schedule(PRUNE_EVERY_MS);
  }

  async close(): Promise<void> {
    await this.pruner?.close();
  }
}

/** The criteria the index answers; a search with any other criterion set is answered by SQL. */
const indexedCriteria: ReadonlySet<keyof PlaceCriteria> = new Set<keyof PlaceCriteria>([
  'categories',
  'cityId',
  'countryCode',
  'minRating',
  'hasPhone',
  'hasWebsite',
  'hasEmail',
  'hasSocial',
  'includeClosed',
]);

/**
 * What the index answers, as its query, or null when SQL must: text, geography (near, bbox, a drawn area),
 * an account's exclusions, and orders other than the default one (relevance without text or `near`, which
 * is the most reviewed first, and `review_count`, the same order) and `rating` (which `searchPage` orders in
 * memory up to `RATING_ORDER_MAX_MATCHES` matches, and hands to SQL above).
 */
export function indexQueryOf(criteria: PlaceCriteria, sort: PlaceSort): IndexQuery | null {
  if (sort !== 'relevance' && sort !== 'review_count' && sort !== 'rating') return null;
  // Any criterion set that the index does not hold goes to SQL: text, geography, exclusions, opening hours
  // (tables of their own, migration 0031), and whatever criterion is added later, which the index must
  // never ignore silently.
  for (const [name, value] of Object.entries(criteria)) {
    if (value !== null && value !== undefined && !indexedCriteria.has(name as keyof PlaceCriteria)) return null;
  }
  const flags: IndexQuery['flags'] = {};
  const wanted = {
    has_phone: criteria.hasPhone,
    has_website: criteria.hasWebsite,
    has_email: criteria.hasEmail,
    has_social: criteria.hasSocial,
  };
  for (const name of flagNames) {
    const v = wanted[name];
    if (v === true || v === false) flags[name] = v;
  }
  return {
    categories: criteria.categories,
    cityId: criteria.cityId,
    countryCode: criteria.countryCode,
    minRating: criteria.minRating,
    flags,
    includeClosed: criteria.includeClosed === true,
  };
}

/** Places read per statement while building, and ids per statement while applying changes. */
const BUILD_BATCH = 50_000;
const APPLY_BATCH = 5_000;
/** Change-log rows read per round. */
const CHANGES_PER_READ = 200_000;
/**
 * Matches a search ordered by rating may have to be ordered in memory (each one's key read and sorted); SQL's
 * covering index (category or city, then rating) reads only a page of a larger one.
 */
const RATING_ORDER_MAX_MATCHES = 5_000;
/** Page rows kept in memory (`PageRowCache`): a thousand pages of 20. */
const PAGE_ROWS_KEPT = 20_000;

/**
 * The in-memory index (`bitmap-index.ts`), built from the database at start, kept current by polling the
 * places version and applying the change log (`place_changes`, migration 0028); rebuilt when the log was
 * pruned past it or when many places moved out of the sorted order. Until the first build is done, and for
 * whatever the index does not hold, SQL answers.
 */
export class MemorySearchEngine extends SqlSearchEngine {
  private index: BitmapIndex | null = null;
  private status: 'building' | 'ready' | 'failed' = 'building';
  private builtMs: number | null = null;
  private loop: PollLoop | undefined;
  /** The tail outgrew its limit: the next round rebuilds. */
  private compactDue = false;
  private readonly rows = new PageRowCache(PAGE_ROWS_KEPT);

  constructor(
    options: EngineOptions,
    private readonly pollMs: number,
  ) {
    super(options);
  }

  override async searchPage(
    criteria: PlaceCriteria,
    sort: PlaceSort,
    after: PlaceKey | null,
    limit: number,
    candidateLimit: number,
  ): Promise<PlacePage> {
    const q = this.index ? indexQueryOf(criteria, sort) : null;
    if (!q || !this.index || (after !== null && typeof after.key !== 'number'))
      return super.searchPage(criteria, sort, after, limit, candidateLimit);
    const index = this.index;
    const result = index.evaluate(q);
    let keys: Array<{ key: number; id: number }>;
    let total: number;
    try {
      total = result.size;
      const from = after as { key: number; id: number } | null;
      if (sort !== 'rating') keys = index.page(result, from, limit + 1);
      else if (total <= RATING_ORDER_MAX_MATCHES) keys = index.pageByRating(result, from, limit + 1);
      else return super.searchPage(criteria, sort, after, limit, candidateLimit);
    } finally {
      result.dispose();
    }
    const page = keys.slice(0, limit);
    const rows = await this.pageRows(page.map((k) => k.id));
    return { total, rows, next: keys.length > limit ? (page.at(-1) ?? null) : null };
  }

  /**
   * The rows of a page's places in its order, from the row cache, the others read by id. Reads go through the
   * read pool, as the SQL path reads its pages: on the event loop's own connection every page would wait for
   * the one before it, which at 50 connections made the tail longer than SQL's. A place gone since is left out.
   */
  private async pageRows(ids: number[]): Promise<PageRow[]> {
    const found = ids.map((id) => this.rows.get(id));
    const missing = ids.filter((_, i) => found[i] === undefined);
    if (missing.length === 0) return found as PageRow[];
    const generation = this.rows.generation;
    const read = await this.options.reads.run('placesByIds', missing);
    this.rows.keep(read, generation);
    const byId = new Map(read.map((r) => [r.id, r]));
    const rows: PageRow[] = [];
    for (let i = 0; i < ids.length; i++) {
      const row = found[i] ?? byId.get(ids[i]!);
      if (row !== undefined) rows.push(row);
    }
    return rows;
  }

  override async countMatches(criteria: PlaceCriteria): Promise<number> {
    const q = this.index ? indexQueryOf(criteria, 'relevance') : null;
    if (!q || !this.index) return super.countMatches(criteria);
    const result = this.index.evaluate(q);
    try {
      return result.size;
    } finally {
      result.dispose();
    }
  }

  override async facets(criteria: PlaceCriteria, by: FacetDimension): Promise<FacetValue[]> {
    const q = this.index ? indexQueryOf(criteria, 'relevance') : null;
    if (!q || !this.index) return super.facets(criteria, by);
    const result = this.index.evaluate(q);
    try {
      return this.index.facet(result, by, q.countryCode);
    } finally {
      result.dispose();
    }
  }

  override state(): EngineState {
    return {
      engine: 'memory',
      status: this.status,
      version: this.index?.version ?? null,
      places: this.index?.size ?? 0,
      tail: this.index?.tailSize ?? 0,
      builtMs: this.builtMs,
    };
  }

  /** The index's bytes (bench, `/readyz` leaves it out: it walks every bitmap). */
  indexBytes(): number {
    return this.index?.bytes() ?? 0;
  }

  override async start(): Promise<void> {
    await super.start();
    await roaringLibraryInitialize();
    try {
      await this.rebuild();
      this.status = 'ready';
    } catch (error) {
      this.status = 'failed';
      this.options.log?.warn({ err: error }, 'the search index could not be built: SQL answers every search');
    }
    this.loop = new PollLoop(
      () => this.catchUp(),
      this.pollMs,
      (error) => this.options.log?.warn({ err: error }, 'the search index could not follow the catalog'),
    );
    this.loop.schedule(this.pollMs);
  }

  override async close(): Promise<void> {
    await this.loop?.close();
    await super.close();
    this.index?.dispose();
    this.index = null;
  }

  /**
   * Brings the index to the current places version (a rebuild when the log cannot). A change that moves many
   * places is searchable as soon as it is applied (from the tail); putting them back in order (a rebuild) is
   * the next round's work, so a change never waits behind it. Public for tests and the bench.
   */
  async catchUp(): Promise<void> {
    const index = this.index;
    if (!index) return this.rebuild();
    if (this.compactDue) {
      this.compactDue = false;
      return this.rebuild();
    }
    if ((await placesVersion(this.options.db)) === index.version) return;
    if (!(await applyChanges(this.options.db, index, (ids) => this.rows.forget(ids)))) return this.rebuild();
    const limit = this.options.tailLimit?.(index.size) ?? Math.max(50_000, index.size / 20);
    if (index.tailSize > limit) this.compactDue = true;
  }

  /** Reads the whole catalog into a new index, brings it up to date, then puts it in place of the old one. */
  async rebuild(): Promise<void> {
    const started = performance.now();
    const db = this.options.db;
    const version = await placesVersion(db);
    const batches: PlaceFacts[][] = [];
    for (let after = 0; ; ) {
      const batch = await placeFactsAfter(db, after, BUILD_BATCH);
      if (batch.length === 0) break;
      batches.push(batch);
      after = batch.at(-1)!.id;
    }
    const next = BitmapIndex.build(version, batches);
    if (!(await applyChanges(db, next))) {
      next.dispose();
      throw new Error('the change log was pruned while the index was being built');
    }
    const old = this.index;
    this.index = next;
    // Rows read before the new index's version may predate changes it holds.
    this.rows.clear();
    old?.dispose();
    this.builtMs = performance.now() - started;
    this.status = 'ready';
    this.options.log?.info({ places: next.size, version: next.version, ms: Math.round(this.builtMs) }, 'search index built');
  }
}

/**
 * Applies the change log since the index's version; false when the log no longer reaches back to it.
 * `changed` hears each round's place ids before their facts are read.
 */
export async function applyChanges(db: Db, index: BitmapIndex, changed?: (placeIds: readonly number[]) => void): Promise<boolean> {
  for (;;) {
    const changes = await placeChangesSince(db, index.version, CHANGES_PER_READ);
    if (!changes.complete) return false;
    changed?.(changes.placeIds);
    const facts: PlaceFacts[] = [];
    for (let i = 0; i < changes.placeIds.length; i += APPLY_BATCH)
      facts.push(...(await placeFactsByIds(db, changes.placeIds.slice(i, i + APPLY_BATCH))));
    index.apply(changes.placeIds, facts, changes.through);
    if (!changes.more) return true;
  }
}

/** The engine `SEARCH_ENGINE` names. */
export function createSearchEngine(kind: 'memory' | 'sql', options: EngineOptions & { pollMs: number }): SearchEngine {
  return kind === 'memory' ? new MemorySearchEngine(options, options.pollMs) : new SqlSearchEngine(options);
}
