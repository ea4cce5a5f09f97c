import { setTimeout as delay } from 'node:timers/promises';
import { type RoaringBitmap32, roaringLibraryInitialize } from 'roaring-wasm';
import type { Db } from '../../../infra/db/database.ts';
import type { ReadPool } from '../../../infra/db/read-pool.ts';
import { currentDeadline } from '../../../infra/db/time-budget.ts';
import { PollLoop } from '../../../infra/poll-loop.ts';
import type { OpenAt } from '../../places/opening-hours.reads.ts';
import { type HoursState, type PlaceSchedules, placeSchedules, readHoursState, schedulesOpenAt } from '../../places/opening-hours.reads.ts';
import { type HoursReadiness, hoursNotReady, hoursReadiness, type RecentHours, recentMatches } from '../../places/opening-hours.recent.ts';
import { placesVersion } from '../../places/place-changes.repository.ts';
import { PlaceMaintenance } from '../../places/place-maintenance.ts';
import { type PlaceCriteria, type PlaceKey, type PlaceSort, usesTrust } from '../query/criteria.ts';
import type { ApiReadTasks } from '../read-tasks.ts';
import { type PlacePage, polygonCandidateLimit } from '../search.reads.ts';
import { finishesWithin, TrustGate } from '../trust-filter.ts';
import { applyChanges } from './apply-changes.ts';
import { BitmapIndex, type FacetDimension, type FacetValue, flagNames, type IndexQuery } from './bitmap-index.ts';
import { type ContactHit, ContactIndex } from './contact-index.ts';
import { everyPlaceFacts } from './engine.repository.ts';
import type { EngineSnapshot, FactsAt } from './engine-snapshot.ts';
import type { EngineState, SearchEngine } from './engine-state.ts';
import { columnsOf } from './fact-columns.ts';
import { cursorFits, distanceToRow, geoCriteria, IndexOrders, insidePolygon, ordersBy, pageInOrder, withinArea } from './geo-search.ts';
import { momentOf, recall, remember } from './moments.ts';
import { numericAfter } from './order-keys.ts';
import { type PageRow, PageRowCache } from './row-cache.ts';

export type { SearchEngine } from './engine-state.ts';

interface EngineOptions {
  db: Db;
  reads: ReadPool<ApiReadTasks>;
  log?: { warn(obj: unknown, msg: string): void; info(obj: unknown, msg: string): void };
  /** Places moved out of the sorted order past which the index is rebuilt (default: 50,000 or 5 % of the index). */
  tailLimit?: (size: number) => number;
  /**
   * The upkeep of the opening-hours tables (app.ts's, started with the server): its clock and window, and the pass
   * a read that the tables cannot answer starts at once (`hoursReady`). Absent: one of the engine's own that runs
   * no background loop (tests, benches, a search object made without a server).
   */
  maintenance?: PlaceMaintenance;
  /**
   * Runs the trust pass now (single-flight with the server's background pass), for a read with a trust filter
   * that finds it behind (`trustReady`). Absent: such a read fails with 503 `not_ready` at once.
   */
  trustPassNow?: () => Promise<unknown>;
  /** The first index from this snapshot when it can; each build from the database written to it (`engine-snapshot.ts`). */
  snapshot?: EngineSnapshot;
}

/** How long a search on an index behind the places version waits for it to catch up before SQL answers. */
const CATCH_UP_WAIT_MS = 100;
/** How long a read with an open filter waits for the opening-hours pass when it has no time budget of its own. */
const HOURS_WAIT_MS = 5000;

/** Every search by SQL, in the read pool. */
export class SqlSearchEngine implements SearchEngine {
  protected readonly maintenance: PlaceMaintenance;

  constructor(protected readonly options: EngineOptions) {
    this.maintenance = options.maintenance ?? new PlaceMaintenance({ db: options.db, ...(options.log ? { log: options.log } : {}) });
  }

  async searchPage(
    criteria: PlaceCriteria,
    sort: PlaceSort,
    after: PlaceKey | null,
    limit: number,
    candidateLimit: number,
  ): Promise<PlacePage> {
    return this.options.reads.run('searchPage', await this.trueOpen(criteria, sort), sort, after, limit, candidateLimit);
  }

  async countMatches(criteria: PlaceCriteria): Promise<number> {
    return this.options.reads.run('countMatches', await this.trueOpen(criteria));
  }

  async facets(criteria: PlaceCriteria, by: FacetDimension): Promise<FacetValue[]> {
    return this.options.reads.run('facetCounts', await this.trueOpen(criteria), by);
  }

  async contactHits(keys: string[]): Promise<ContactHit[]> {
    return keys.length === 0 ? [] : this.options.reads.run('contactHits', keys);
  }

  /**
   * The criteria with the open filter as the SQL can answer it truly: the places changed since the pass decided;
   * with a trust filter, once the trust pass has caught up (`trustReady`).
   */
  private async trueOpen(criteria: PlaceCriteria, sort?: PlaceSort): Promise<PlaceCriteria> {
    if (usesTrust(criteria, sort)) await this.trustReady();
    if (!criteria.open) return criteria;
    const ready = await this.hoursReady(criteria.open, () => readHoursState(this.options.db));
    return { ...criteria, open: ready.open };
  }

  /**
   * The opening-hours pass that answers the moment truly (`opening-hours.recent.ts`), with the places changed
   * since it. When there is none (no pass yet, a window that does not reach the moment, too many changes since),
   * the pass runs at once (single-flight with the background one) and the read waits for it within its time
   * budget, leaving part of the budget to the read itself; past that, 503 `not_ready` with `Retry-After`.
   * `held`: the pass the caller answers from.
   */
  protected async hoursReady(open: OpenAt, held: () => Promise<HoursState | null>): Promise<Extract<HoursReadiness, { ready: true }>> {
    const started = Date.now();
    const deadline = currentDeadline() ?? started + HOURS_WAIT_MS;
    const reserve = Math.min(1000, (deadline - started) / 4);
    const hours = this.maintenance;
    const check = async () =>
      hoursReadiness(this.options.db, open, { nowMs: hours.now(), windowDays: hours.windowDays, state: await held() });
    let readiness = await check();
    if (readiness.ready) return readiness;
    // A pass of another node (or this one's background pass) may have committed since the caller's copy.
    await this.followHours();
    readiness = await check();
    if (readiness.ready) return readiness;
    // The pass at once, through the maintenance (single-flight with its background pass), followed when it ends.
    const pass = hours.passNow().then(() => this.followHours());
    if (await finishesWithin(pass, deadline - reserve - Date.now())) {
      readiness = await check();
      if (readiness.ready) return readiness;
    }
    throw hoursNotReady(readiness, hours.passRemainingMs(HOURS_WAIT_MS) / 1000);
  }

  /**
   * Waits until the trust pass has caught up with the catalog (`trust-filter.ts`): at once when it has, else the
   * pass runs now (`trustPassNow`) and the read waits for it within its time budget, leaving part of the budget
   * to the read itself; past that, 503 `not_ready` with `Retry-After`. Answers the places version it is ready at.
   */
  protected trustReady(): Promise<number> {
    this.trustGate ??= new TrustGate(this.options.db, this.options.trustPassNow);
    return this.trustGate.ready();
  }

  private trustGate: TrustGate | undefined;

  state(): EngineState {
    return { engine: 'sql' };
  }

  async hoursComputedAt(): Promise<string | null> {
    return (await readHoursState(this.options.db))?.computedAt ?? null;
  }

  async start(): Promise<void> {}

  /** After a check of the opening-hours tables (`PlaceMaintenance`): what the engine holds of them brought up to date (none here). */
  async followHours(): Promise<void> {}

  async close(): Promise<void> {}
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
  'open',
  'emailStatus',
  'phoneType',
  'websiteStatus',
  'minConfidence',
  'minLeadScore',
  'updatedSince',
  'verifiedSince',
  ...geoCriteria,
  'text',
  'textKind',
]);

/**
 * What the index answers, as its query, or null when SQL must: typo-tolerant text (edit distances on the names,
 * `search.reads.ts`), a contact in the text, an account's exclusions, and orders other than the default one
 * (relevance without text, which is the most reviewed first or with `near` the nearest, and `review_count`),
 * text relevance (`pageByText`), `rating` (ordered in memory up to `RATING_ORDER_MAX_MATCHES` matches, by SQL
 * above), `lead_score`, `distance` with a point and `name` (`geo-search.ts`).
 */
export function indexQueryOf(criteria: PlaceCriteria, sort: PlaceSort): IndexQuery | null {
  if (sort !== 'relevance' && sort !== 'review_count' && sort !== 'rating' && sort !== 'lead_score' && !ordersBy(sort, criteria))
    return null;
  if (criteria.text && criteria.text.mode !== 'substring') return null;
  // Any criterion set that the index does not hold goes to SQL: typo-tolerant text, exclusions, and whatever
  // criterion is added later, which the index must never ignore silently.
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
  const atLeast: IndexQuery['atLeast'] = [];
  for (const kind of criteria.minConfidence?.kinds ?? []) atLeast.push({ dim: `${kind}_confidence`, min: criteria.minConfidence!.value });
  if (criteria.minLeadScore != null) atLeast.push({ dim: 'lead_score', min: criteria.minLeadScore });
  if (criteria.updatedSince != null) atLeast.push({ dim: 'updated_at', min: Date.parse(criteria.updatedSince) });
  if (criteria.verifiedSince != null) atLeast.push({ dim: 'verified_at', min: Date.parse(criteria.verifiedSince) });
  const statuses: IndexQuery['statuses'] = {};
  if (criteria.emailStatus != null) statuses.email_status = criteria.emailStatus;
  if (criteria.phoneType != null) statuses.phone_type = criteria.phoneType;
  if (criteria.websiteStatus != null) statuses.website_status = criteria.websiteStatus;
  return {
    categories: criteria.categories,
    cityId: criteria.cityId,
    countryCode: criteria.countryCode,
    minRating: criteria.minRating,
    flags,
    statuses,
    atLeast,
    includeClosed: criteria.includeClosed === true,
    open: criteria.open ?? null,
    text: criteria.text ? { words: criteria.text.words, kind: criteria.textKind ?? null } : null,
  };
}

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
  /** The coordinates and the name order of `index` (its extensions), swapped with it. */
  private orders: IndexOrders | null = null;
  /** The contact postings, built and kept current with `index`. */
  private contacts: ContactIndex | null = null;
  private status: 'building' | 'ready' | 'failed' = 'building';
  private builtMs: number | null = null;
  private loop: PollLoop | undefined;
  /** `place_hours` as the last pass left it, with the sets of schedules open at recent moments. */
  private hours: (PlaceSchedules & { maxSchedule: number; moments: Map<string, Uint8Array> }) | null = null;
  private following: Promise<void> | undefined;
  private catching: Promise<void> | undefined;
  /** The places open at recent moments as slots of one state of the index and of the hours. */
  private slots: { index: BitmapIndex | null; version: number; hours: unknown; bitmaps: Map<string, RoaringBitmap32> } = {
    index: null,
    version: -1,
    hours: null,
    bitmaps: new Map(),
  };
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
    after = numericAfter(after, sort);
    const matched = cursorFits(sort, after) ? await this.match(criteria, sort, polygonCandidateLimit) : null;
    if (!matched) return super.searchPage(criteria, sort, after, limit, candidateLimit);
    const { index, result } = matched;
    let keys: PlaceKey[];
    let total: number;
    try {
      total = result.size;
      // A drawn area holding more candidates than the SQL checks is refused alike (the search service's 400).
      if (matched.candidates > polygonCandidateLimit) return { total: 0, rows: [], next: null, candidateLimit: polygonCandidateLimit };
      const from = after as { key: number; id: number } | null;
      // With text, relevance is the text's tiers even with `near` (criteria.sql.ts's order).
      const byText = sort === 'relevance' && matched.q.text;
      const ordered = byText ? null : pageInOrder(matched.orders, index, result, criteria, sort, after, limit + 1);
      if (byText) keys = index.pageByText(result, matched.q.text!, from, limit + 1);
      else if (ordered) keys = ordered;
      else if (sort === 'lead_score') keys = index.pageByValue('lead_score', result, from, limit + 1);
      else if (sort !== 'rating') keys = index.page(result, from, limit + 1);
      else if (total <= RATING_ORDER_MAX_MATCHES) keys = index.pageByValue('rating', result, from, limit + 1);
      else return super.searchPage(criteria, sort, after, limit, candidateLimit);
    } finally {
      result.dispose();
    }
    const page = keys.slice(0, limit);
    const read = await this.pageRows(page.map((k) => k.id));
    const rows = criteria.near ? read.map((r) => ({ ...r, distance_m: distanceToRow(criteria, r) })) : read;
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

  override async contactHits(keys: string[]): Promise<ContactHit[]> {
    return this.contacts && (await this.current()) ? this.contacts.lookup(keys) : super.contactHits(keys);
  }

  /**
   * Whether the index holds the catalog as it is now. One behind it (a write since the last round) catches up at once and
   * answers if that takes at most `CATCH_UP_WAIT_MS`, else SQL does: a search right after a write never reads the index from before it.
   */
  private async current(): Promise<boolean> {
    if (!this.index) return false;
    const version = await placesVersion(this.options.db);
    if (this.index.version === version) return true;
    const caughtUp = this.catchUp()
      .then(() => this.index !== null && this.index.version >= version)
      .catch(() => false);
    return Promise.race([caughtUp, delay(CATCH_UP_WAIT_MS, false, { ref: false })]);
  }

  override async countMatches(criteria: PlaceCriteria): Promise<number> {
    const matched = await this.match(criteria, 'relevance');
    if (!matched) return super.countMatches(criteria);
    try {
      return matched.result.size;
    } finally {
      matched.result.dispose();
    }
  }

  override async facets(criteria: PlaceCriteria, by: FacetDimension): Promise<FacetValue[]> {
    const matched = await this.match(criteria, 'relevance');
    if (!matched) return super.facets(criteria, by);
    try {
      return matched.index.facet(matched.result, by, matched.q.countryCode);
    } finally {
      matched.result.dispose();
    }
  }

  /**
   * The matches of a search as a bitmap of the index (the caller disposes it), or null when SQL answers: a
   * criterion the index does not hold, no index yet, or an open filter at a moment whose schedules belong to
   * another opening-hours pass than the one the engine holds (it catches up in the background).
   */
  private async match(
    criteria: PlaceCriteria,
    sort: PlaceSort,
    polygonLimit = Number.POSITIVE_INFINITY,
  ): Promise<{ index: BitmapIndex; orders: IndexOrders; q: IndexQuery; result: RoaringBitmap32; candidates: number } | null> {
    const q = this.index ? indexQueryOf(criteria, sort) : null;
    if (!q || !(await this.current())) return null;
    // The trust pass caught up at a version the index has not applied yet: SQL answers (the index holds nulls
    // or stale statuses for the places the pass just wrote).
    if (usesTrust(criteria, sort) && (await this.trustReady()) !== this.index?.version) return null;
    const recent = q.open ? (await this.hoursReady(q.open, async () => this.hours?.state ?? null)).recent : null;
    if (q.open && !(await this.prepareOpen(q.open))) return null;
    // From here on synchronous: the index and the hours cannot change under the evaluation.
    const index = this.index;
    const orders = this.orders;
    if (!index || !orders) return null;
    const open = q.open && recent ? this.openSlots(index, q.open, recent) : null;
    if (q.open && !open) return null;
    let result = index.evaluate(q, open);
    const inArea = withinArea(orders, result, criteria, index.size);
    if (inArea) {
      result.dispose();
      result = inArea;
    }
    const candidates = result.size;
    if (criteria.polygon && candidates <= polygonLimit) {
      const inside = insidePolygon(orders, result, criteria.polygon);
      result.dispose();
      result = inside;
    }
    return { index, orders, q, result, candidates: criteria.polygon ? candidates : 0 };
  }

  /**
   * Makes sure the schedules open at the moment are known (the set is read from `place_open_intervals` once
   * per moment: `open_now` is to the minute). False when the set read belongs to another pass than the
   * engine's copy of `place_hours`.
   */
  private async prepareOpen(open: OpenAt): Promise<boolean> {
    const hours = this.hours;
    if (!hours) return false;
    if (open.unparsed || recall(hours.moments, momentOf(open))) return true;
    const found = await schedulesOpenAt(this.options.db, open);
    if (found.key !== hours.key) {
      void this.followHours().catch((error) => this.options.log?.warn({ err: error }, 'the opening hours could not be read'));
      return false;
    }
    if (this.hours !== hours) return false;
    const set = new Uint8Array(hours.maxSchedule + 1);
    for (const id of found.schedules) if (id <= hours.maxSchedule) set[id] = 1;
    remember(hours.moments, momentOf(open), set);
    return true;
  }

  /**
   * The slots of the places open at the moment (or whose hours could not be parsed: `open.unparsed`), kept
   * until the index or the hours change; null when the moment's set is not known (`prepareOpen`).
   */
  private openSlots(index: BitmapIndex, open: OpenAt, recent: RecentHours): RoaringBitmap32 | null {
    const hours = this.hours;
    const set = open.unparsed ? null : hours && recall(hours.moments, momentOf(open));
    if (!hours || hours.key !== recent.key || (!open.unparsed && !set)) return null;
    const slots = this.slots;
    if (slots.index !== index || slots.version !== index.version || slots.hours !== hours) {
      for (const bitmap of slots.bitmaps.values()) bitmap.dispose();
      this.slots = { index, version: index.version, hours, bitmaps: new Map() };
    }
    const key = open.unparsed ? 'unparsed' : momentOf(open);
    let bitmap = recall(this.slots.bitmaps, key);
    if (!bitmap) {
      const { placeIds, schedules } = hours;
      bitmap = set
        ? index.slotsOfPlaces(placeIds, (i) => set[schedules[i]!] === 1)
        : index.slotsOfPlaces(placeIds, (i) => schedules[i] === 0);
      remember(this.slots.bitmaps, key, bitmap)?.dispose();
    }
    if (recent.changed.length === 0) return bitmap;
    // The places changed since the pass: out of the pass's answer, and in where they are open now (`recentMatches`).
    const adjustedKey = `${key}@${recent.through}`;
    let adjusted = recall(this.slots.bitmaps, adjustedKey);
    if (!adjusted) {
      adjusted = bitmap.clone();
      const changed = index.slotsOfPlaces(Int32Array.from(recent.changed), () => true);
      const matching = index.slotsOfPlaces(Int32Array.from(recentMatches(recent, open)), () => true);
      adjusted.andNotInPlace(changed).orInPlace(matching);
      changed.dispose();
      matching.dispose();
      remember(this.slots.bitmaps, adjustedKey, adjusted)?.dispose();
    }
    return adjusted;
  }

  /** Reloads `place_hours` when a pass (of this node or another) replaced the one the engine holds. */
  override followHours(): Promise<void> {
    this.following ??= (async () => {
      const state = await readHoursState(this.options.db);
      if (this.hours && this.hours.key === (state?.key ?? null)) return;
      const loaded = await placeSchedules(this.options.db);
      this.hours = { ...loaded, maxSchedule: loaded.schedules.reduce((m, id) => Math.max(m, id), 0), moments: new Map() };
    })().finally(() => {
      this.following = undefined;
    });
    return this.following;
  }

  override async hoursComputedAt(): Promise<string | null> {
    return this.hours ? this.hours.computedAt : super.hoursComputedAt();
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
    return (this.index?.bytes() ?? 0) + (this.orders?.bytes() ?? 0);
  }

  override async start(): Promise<void> {
    await super.start();
    await roaringLibraryInitialize();
    try {
      const snapshot = this.options.snapshot;
      const loaded = await snapshot?.load();
      if (loaded) await this.rebuild(loaded).catch((error) => this.options.log?.warn({ err: error }, 'search index snapshot not used'));
      if (!this.index || (loaded && !(await snapshot!.holdsCatalog(this.index.size)))) await this.rebuild();
      await this.followHours();
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
    await this.following;
    for (const bitmap of this.slots.bitmaps.values()) bitmap.dispose();
    this.slots.bitmaps.clear();
    this.index?.dispose();
    this.index = null;
    this.orders = null;
    this.contacts = null;
  }

  /**
   * Brings the index to the current places version (a rebuild when the log cannot). A change that moves many
   * places is searchable as soon as it is applied (from the tail); putting them back in order (a rebuild) is
   * the next round's work, so a change never waits behind it. Public for tests and the bench.
   */
  async catchUp(): Promise<void> {
    this.catching ??= this.catchUpRound().finally(() => (this.catching = undefined));
    return this.catching;
  }

  /** One catch-up; never two at once (`catchUp`: the poll loop's rounds and a search's share it). */
  private async catchUpRound(): Promise<void> {
    const index = this.index;
    if (!index) return this.rebuild();
    if (this.compactDue) {
      this.compactDue = false;
      return this.rebuild();
    }
    if ((await placesVersion(this.options.db)) === index.version) return;
    if (!(await applyChanges(this.options.db, index, (ids) => this.rows.forget(ids), this.contacts ?? undefined))) return this.rebuild();
    const limit = this.options.tailLimit?.(index.size) ?? Math.max(50_000, index.size / 20);
    if (index.unsortedSize > limit) this.compactDue = true;
  }

  /** The whole catalog (or a snapshot's facts) into a new index, up to date, in place of the old one; see `engine-snapshot.ts`. */
  async rebuild(from?: FactsAt): Promise<void> {
    const started = performance.now();
    const db = this.options.db;
    const first = !this.index;
    const version = from?.version ?? (await placesVersion(db));
    const facts = from?.facts ?? columnsOf(await everyPlaceFacts(db));
    const orders = new IndexOrders();
    const next = BitmapIndex.build(version, facts, (index) => orders.attach(index));
    const contacts = ContactIndex.fromColumns(facts);
    if (!(await applyChanges(db, next, undefined, contacts))) {
      next.dispose();
      throw new Error('the change log was pruned while the index was being built');
    }
    const old = this.index;
    this.index = next;
    this.orders = orders;
    this.contacts = contacts;
    // Rows read before the new index's version may predate changes it holds.
    this.rows.clear();
    old?.dispose();
    this.builtMs = performance.now() - started;
    this.status = 'ready';
    this.options.log?.info(
      { places: next.size, version: next.version, ms: Math.round(this.builtMs), from: from ? 'snapshot' : 'database' },
      'search index built',
    );
    // Awaited on the first build, so that the next process starts from it.
    if (!from) await (first ? this.options.snapshot?.save({ version, facts }) : void this.options.snapshot?.save({ version, facts }));
  }
}

/** The engine `SEARCH_ENGINE` names. */
export function createSearchEngine(kind: 'memory' | 'sql', options: EngineOptions & { pollMs: number }): SearchEngine {
  return kind === 'memory' ? new MemorySearchEngine(options, options.pollMs) : new SqlSearchEngine(options);
}
