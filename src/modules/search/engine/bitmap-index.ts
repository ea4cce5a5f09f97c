import { RoaringBitmap32 } from 'roaring-wasm';
import { emailStatuses, phoneTypes, websiteStatuses } from '../../contacts/trust.types.ts';
import type { OpenAt } from '../../places/opening-hours.reads.ts';
import type { PlaceFacts } from './engine.repository.ts';
import { defaultOrder, type FactColumns, FactsRow, textAt } from './fact-columns.ts';
import { before, keepFirst, type OrderKey } from './order-keys.ts';
import type { SlotExtension, SlotExtensionsOf } from './slot-extension.ts';
import { type IndexText, TextIndex } from './text-index.ts';

/** The boolean filters the index holds, by their facet name. */
export const flagNames = ['has_phone', 'has_website', 'has_email', 'has_social'] as const;
export type FlagName = (typeof flagNames)[number];
const statusNames = ['open', 'visible'] as const;
const allFlags = [...statusNames, ...flagNames] as const;
type AnyFlag = (typeof allFlags)[number];

/** The trust pass's statuses on a place (its best email's, best phone's type, its website's): one bitmap per value. */
export const statusDims = { email_status: emailStatuses, phone_type: phoneTypes, website_status: websiteStatuses } as const;
export type StatusDim = keyof typeof statusDims;
const statusDimNames = Object.keys(statusDims) as StatusDim[];

/**
 * Numbers a search asks a least value of (`>=`): each kind's best confidence, the lead score, when the content changed
 * or a value was checked (ms). Per slot; a threshold's bitmap is made on first use, kept (`THRESHOLDS_KEPT`), maintained.
 */
export const scoreDims = ['email_confidence', 'phone_confidence', 'website_confidence', 'lead_score', 'updated_at', 'verified_at'] as const;
export type ScoreDim = (typeof scoreDims)[number];

/** Threshold bitmaps kept (the most recently used): a handful of confidences and dates is what searches ask. */
const THRESHOLDS_KEPT = 32;

/** The dimensions facets count by. */
export const facetDimensions = ['category', 'city', 'country', ...flagNames] as const;
export type FacetDimension = (typeof facetDimensions)[number];
export interface FacetValue {
  value: string | number | boolean;
  count: number;
}

/** What the bitmaps answer of a search without text or an account's exclusion (its area: `geo-search.ts`, as `within`). */
export interface IndexQuery {
  categories: string[] | null;
  cityId: number | null;
  countryCode: string | null;
  minRating: number | null;
  flags: Partial<Record<FlagName, boolean>>;
  /** A status the place's value must have, per dimension (`statusDims`). */
  statuses: Partial<Record<StatusDim, string>>;
  /** Least values (`>=`; a place without the value never matches). */
  atLeast: Array<{ dim: ScoreDim; min: number }>;
  includeClosed: boolean;
  /**
   * Open at a moment (`PlaceCriteria.open`): the owner turns it into the places of the schedules open then
   * and hands them to `evaluate` as `within`.
   */
  open: OpenAt | null;
  /**
   * Names holding every word (`PlaceCriteria.text`, substring mode), or, with `kind`, the places of the kind of
   * business the text named (`PlaceCriteria.textKind`) whose names hold its other words, in its city if any.
   */
  text: IndexText | null;
}

const NONE = -1;
/** Matches up to which a union part (a type's categories, a rating threshold) is tested slot by slot. */
const FEW_MATCHES = 4096;

/**
 * The catalog's searchable facts as compressed bitmaps (roaring) over internal ids ("slots"). Slots are
 * given in the default order (most reviewed first, then the larger place id), so the first page of a
 * search is the first set bits of its intersection and its exact total the intersection's cardinality.
 *
 * Changes keep a place's slot when its key did not move; otherwise the old slot is emptied and the place
 * gets a new slot after the sorted region ("the tail"), which a page merges by key. The owner rebuilds
 * when the tail grows (`tailSize`).
 */
export class BitmapIndex {
  /** Slots in use; slots below `sorted` are in the default order. */
  private slots = 0;
  private sorted = 0;
  private capacity = 0;
  private extId = new Int32Array(0);
  private key = new Float64Array(0);
  private cat = new Int32Array(0);
  private city = new Int32Array(0);
  private country = new Int32Array(0);
  private rating = new Float64Array(0);
  private bits = new Uint8Array(0);
  /** Per status dimension, the code of each slot's value (its index in `statusDims`, NONE: null). */
  private status: Record<StatusDim, Int8Array> = {
    email_status: new Int8Array(0),
    phone_type: new Int8Array(0),
    website_status: new Int8Array(0),
  };
  /** Per score dimension, each slot's value (NaN: null, which is not >= anything). */
  private score: Record<ScoreDim, Float64Array> = Object.fromEntries(scoreDims.map((d) => [d, new Float64Array(0)])) as Record<
    ScoreDim,
    Float64Array
  >;
  /** Slot of each place id (NONE: not in the index). */
  private slotOf = new Int32Array(0);

  private readonly categories: string[] = [];
  private readonly categoryCode = new Map<string, number>();
  private readonly byCategory: RoaringBitmap32[] = [];
  private readonly countries: string[] = [];
  private readonly countryCode = new Map<string, number>();
  private readonly byCountry: RoaringBitmap32[] = [];
  private readonly byCity = new Map<number, RoaringBitmap32>();
  /** The cities each country's places were filed under (only grows: a city left empty counts 0). */
  private readonly citiesOf = new Map<number, Set<number>>();
  private readonly byRating = new Map<number, RoaringBitmap32>();
  private readonly byFlag = new Map<AnyFlag, RoaringBitmap32>(allFlags.map((f) => [f, new RoaringBitmap32()]));
  private readonly byStatus = Object.fromEntries(statusDimNames.map((d) => [d, statusDims[d].map(() => new RoaringBitmap32())])) as Record<
    StatusDim,
    RoaringBitmap32[]
  >;
  /** The names of every slot and their trigrams (`text-index.ts`). */
  private readonly text = new TextIndex();
  /** The slots at or above a threshold (`atLeast`), by `dim>=min`, least recently used first. */
  private readonly thresholds = new Map<string, { dim: ScoreDim; min: number; bitmap: RoaringBitmap32 }>();
  private disposed = false;
  /** The extensions told of every slot (`SlotExtension`), given to `build`. */
  private extensions: readonly SlotExtension[] = [];

  constructor(
    /** The places version the index holds the catalog at. */
    public version: number,
  ) {}

  private places = 0;

  /** Places the index holds. */
  get size(): number {
    return this.places;
  }

  /** Slots after the sorted region: places added or moved since the build. */
  get tailSize(): number {
    return this.slots - this.sorted;
  }

  /** Slots out of an order (the tail, or an extension's loose slots): what a rebuild puts back. */
  get unsortedSize(): number {
    return Math.max(this.tailSize, ...this.extensions.map((e) => e.looseSize));
  }

  /** The place id of a slot. */
  placeIdOf(slot: number): number {
    return this.extId[slot]!;
  }

  /** Builds the index from every place's facts by column (any order, one `FactsRow`): slots in the default order, each bitmap in one go. */
  static build(version: number, facts: FactColumns, extensions: SlotExtensionsOf = () => []): BitmapIndex {
    const index = new BitmapIndex(version);
    index.extensions = extensions(index);
    const n = facts.size;
    const { order, maxId } = defaultOrder(facts);
    index.ensureCapacity(n, maxId);
    const lists = new Map<RoaringBitmap32, number[]>();
    const listOf = (bitmap: RoaringBitmap32): number[] => {
      let list = lists.get(bitmap);
      if (!list) lists.set(bitmap, (list = []));
      return list;
    };
    const row = n > 0 ? new FactsRow(facts) : null;
    for (let r = 0; r < n; r++) {
      const s = index.slots++;
      index.fill(s, row!.at(order[r]!));
      for (const bitmap of index.bitmapsOf(s)) listOf(bitmap).push(s);
    }
    index.sorted = index.slots;
    for (const extension of index.extensions) extension.seal(index.sorted);
    const document = n > 0 ? textAt(facts, 'document') : () => '';
    index.text.load(Array.from(order, (i) => document(i) ?? ''));
    for (const [bitmap, list] of lists) {
      bitmap.addMany(Uint32Array.from(list));
      bitmap.runOptimize();
      bitmap.shrinkToFit();
    }
    return index;
  }

  /**
   * Applies the current state of changed places: `facts` for those that exist, every id of `ids` (a
   * place absent from `facts` is gone). Returns how many places were moved to the tail.
   */
  apply(ids: readonly number[], facts: readonly PlaceFacts[], version: number): number {
    const now = new Map(facts.map((f) => [f.id, f]));
    let moved = 0;
    for (const id of ids) {
      const s = id < this.slotOf.length ? this.slotOf[id]! : NONE;
      const f = now.get(id);
      if (s !== NONE) {
        for (const bitmap of this.bitmapsOf(s)) bitmap.delete(s);
        this.text.remove(s);
        this.slotOf[id] = NONE;
        this.places--;
      }
      if (!f) continue;
      let target = s;
      if (s === NONE || this.key[s] !== f.review_key) {
        this.ensureCapacity(this.slots + 1, id);
        target = this.slots++;
        moved++;
      }
      this.fill(target, f);
      for (const bitmap of this.bitmapsOf(target)) bitmap.add(target);
      this.text.set(target, f.document);
    }
    this.version = version;
    return moved;
  }

  /**
   * The places matching `q` as a bitmap of slots, which the caller disposes. The single bitmaps (city,
   * country, a flag, a one-category type) are intersected first, smallest first; a part that is a union of
   * values (a type's categories, the ratings at or above a threshold) is applied last, value by value, to that
   * intersection: the union of (matches ∩ value) reads only the few matches' containers, where the union of the
   * values themselves would first build a bitmap of most of the catalog (the ratings at or above 3.5); up to
   * `FEW_MATCHES` matches, each match's stored value (`cat`, `rating`) is tested instead.
   * `within`: slots computed outside the index that the matches must also be in (the places open at `q.open`:
   * `slotsOfPlaces`), left to the caller.
   */
  evaluate(q: IndexQuery, within: RoaringBitmap32 | null = null): RoaringBitmap32 {
    if (q.open && !within) throw new Error('an open filter needs the places open at its moment');
    const include: RoaringBitmap32[] = [this.byFlag.get(q.includeClosed ? 'visible' : 'open')!];
    if (within) include.push(within);
    const exclude: RoaringBitmap32[] = [];
    /** A union part: its values' bitmaps, and the same test on a slot's stored value. */
    const anyOf: Array<{ values: RoaringBitmap32[]; holds: (s: number) => boolean }> = [];
    /** A part of the query: false when nothing can match it (no bitmap: an unknown value). */
    const part = (values: RoaringBitmap32[], holds?: (s: number) => boolean): boolean => {
      if (values.length === 0) return false;
      if (values.length === 1 || !holds) include.push(values[0]!);
      else anyOf.push({ values, holds });
      return true;
    };
    const known = (b: RoaringBitmap32 | undefined): RoaringBitmap32[] => (b ? [b] : []);
    if (q.categories) {
      const codes = q.categories.map((c) => this.categoryCode.get(c)).filter((c) => c !== undefined);
      const wanted = new Set(codes);
      if (
        !part(
          codes.map((c) => this.byCategory[c]!),
          (s) => wanted.has(this.cat[s]!),
        )
      )
        return new RoaringBitmap32();
    }
    if (q.cityId !== null && !part(known(this.byCity.get(q.cityId)))) return new RoaringBitmap32();
    if (q.countryCode !== null) {
      const code = this.countryCode.get(q.countryCode);
      if (!part(known(code === undefined ? undefined : this.byCountry[code]))) return new RoaringBitmap32();
    }
    if (q.minRating !== null) {
      const min = q.minRating;
      // A slot without a rating holds NaN, which is not >= any threshold.
      if (
        !part(
          [...this.byRating].filter(([r]) => r >= min).map(([, b]) => b),
          (s) => this.rating[s]! >= min,
        )
      )
        return new RoaringBitmap32();
    }
    for (const name of flagNames) {
      const wanted = q.flags[name];
      if (wanted === true) include.push(this.byFlag.get(name)!);
      if (wanted === false) exclude.push(this.byFlag.get(name)!);
    }
    for (const dim of statusDimNames) {
      const wanted = q.statuses[dim];
      if (wanted === undefined) continue;
      const code = (statusDims[dim] as readonly string[]).indexOf(wanted);
      if (code === NONE) return new RoaringBitmap32();
      include.push(this.byStatus[dim][code]!);
    }
    for (const { dim, min } of q.atLeast) include.push(this.threshold(dim, min));
    const sized = include.map((b) => ({ b, size: b.size })).sort((x, y) => x.size - y.size);
    let result = sized.length > 1 ? RoaringBitmap32.and(sized[0]!.b, sized[1]!.b) : sized[0]!.b.clone();
    try {
      for (let i = 2; i < sized.length && !result.isEmpty; i++) result.andInPlace(sized[i]!.b);
      for (const { values, holds } of anyOf) {
        if (result.isEmpty) break;
        if (result.size <= FEW_MATCHES) {
          // Few matches: each one's stored value decides, without a bitmap per value.
          const next = RoaringBitmap32.from(result.toUint32Array().filter(holds));
          result.dispose();
          result = next;
          continue;
        }
        const pieces: RoaringBitmap32[] = [];
        try {
          for (const v of values) pieces.push(RoaringBitmap32.and(result, v));
          const next = RoaringBitmap32.orMany(pieces);
          result.dispose();
          result = next;
        } finally {
          for (const piece of pieces) piece.dispose();
        }
      }
      for (const b of exclude) result.andNotInPlace(b);
      if (!q.text) return result;
      const named = this.named(q.text, result);
      result.dispose();
      result = named;
      return result;
    } catch (error) {
      result.dispose();
      throw error;
    }
  }

  /** The slots of `within` that match a search's text (`TextIndex.named`), a kind's places from the bitmaps here. */
  private named(text: IndexText, within: RoaringBitmap32): RoaringBitmap32 {
    return this.text.named(text, within, (categories) => {
      const codes = [...new Set(categories)].map((c) => this.categoryCode.get(c)).filter((c) => c !== undefined);
      return {
        categories: codes.map((c) => this.byCategory[c]!),
        city: text.kind?.cityId == null ? null : (this.byCity.get(text.kind.cityId) ?? new RoaringBitmap32()),
      };
    });
  }

  /**
   * The first `limit` matches of `result` strictly after `after` in text relevance (SQL's `relevance` with text:
   * `textTiers`, ties by place id ascending); the keys are the tiers.
   */
  pageByText(result: RoaringBitmap32, text: IndexText, after: OrderKey | null, limit: number): OrderKey[] {
    return this.text.pageByRelevance(result, text.words, text.kind !== null, (s) => this.extId[s]!, after, limit);
  }

  /**
   * The slots whose `dim` is at least `min`, kept for the next searches with that threshold (and maintained by
   * `apply`); made by one pass over the slots the first time.
   */
  private threshold(dim: ScoreDim, min: number): RoaringBitmap32 {
    const key = `${dim}>=${min}`;
    const kept = this.thresholds.get(key);
    if (kept) {
      this.thresholds.delete(key);
      this.thresholds.set(key, kept);
      return kept.bitmap;
    }
    const values = this.score[dim];
    const slots: number[] = [];
    // A slot emptied by a change (its place moved to the tail or is gone) keeps its values: only live slots count.
    for (let s = 0; s < this.slots; s++) if (values[s]! >= min && this.slotOf[this.extId[s]!] === s) slots.push(s);
    const bitmap = new RoaringBitmap32();
    bitmap.addMany(Uint32Array.from(slots));
    bitmap.runOptimize();
    bitmap.shrinkToFit();
    this.thresholds.set(key, { dim, min, bitmap });
    if (this.thresholds.size > THRESHOLDS_KEPT) {
      const [oldest, evicted] = this.thresholds.entries().next().value!;
      this.thresholds.delete(oldest);
      // A bitmap handed to a running evaluation is never this one: `evaluate` is synchronous.
      evicted.bitmap.dispose();
    }
    return bitmap;
  }

  /**
   * The first `limit` matches of `result` after `after` by lead score or rating (`coalesce(value, -1)`, then id,
   * both descending, as SQL sorts them): one pass keeping the best `limit`, the matches' count and no sort.
   */
  pageByValue(by: 'lead_score' | 'rating', result: RoaringBitmap32, after: OrderKey | null, limit: number): OrderKey[] {
    const values = by === 'rating' ? this.rating : this.score.lead_score;
    const best: OrderKey[] = [];
    for (const s of result.toUint32Array()) {
      const v = values[s]!;
      const key = Number.isNaN(v) ? -1 : v;
      const id = this.extId[s]!;
      if (after && !(key < after.key || (key === after.key && id < after.id))) continue;
      const last = best.length === limit ? best[limit - 1]! : null; // a full page takes only what beats its last
      if (last && !(key > last.key || (key === last.key && id > last.id))) continue;
      keepFirst(best, { key, id }, limit, before);
    }
    return best;
  }

  /**
   * The slots of the places `placeIds[i]` for each `i` that `take(i)` accepts (places the index does not hold
   * are left out), as a bitmap the caller disposes: how a set of places known by id becomes a filter.
   */
  slotsOfPlaces(placeIds: Int32Array, take: (i: number) => boolean): RoaringBitmap32 {
    const slots: number[] = [];
    for (let i = 0; i < placeIds.length; i++) {
      const id = placeIds[i]!;
      if (id < this.slotOf.length && this.slotOf[id] !== NONE && take(i)) slots.push(this.slotOf[id]!);
    }
    const sorted = Uint32Array.from(slots).sort();
    const bitmap = new RoaringBitmap32();
    bitmap.addMany(sorted);
    bitmap.runOptimize();
    return bitmap;
  }

  /**
   * The first `limit` matches of `result` strictly after `after` in the default order: their place ids and
   * keys. The sorted region is read by rank from the first slot after `after`; the tail's matches (few:
   * the owner rebuilds when it grows) are merged by key.
   */
  page(result: RoaringBitmap32, after: OrderKey | null, limit: number): OrderKey[] {
    const start = after ? this.sortedPositionAfter(after) : 0;
    const inSorted = this.sorted === 0 ? 0 : result.rank(this.sorted - 1);
    const out: OrderKey[] = [];
    for (let r = start === 0 ? 0 : result.rank(start - 1); r < inSorted && out.length < limit; r++) out.push(this.keyOf(result.select(r)));
    if (inSorted === result.size) return out;
    const tail: OrderKey[] = [];
    for (let r = inSorted; r < result.size; r++) {
      const k = this.keyOf(result.select(r));
      if (!after || before(after, k)) tail.push(k);
    }
    return [...out, ...tail].sort((a, b) => b.key - a.key || b.id - a.id).slice(0, limit);
  }

  /**
   * Matches of `result` per value of a dimension, largest first (ties by value). `countryCode`: the
   * search's country, whose cities alone can hold its matches.
   */
  facet(result: RoaringBitmap32, by: FacetDimension, countryCode: string | null = null): FacetValue[] {
    if (by !== 'category' && by !== 'city' && by !== 'country') {
      const yes = result.andCardinality(this.byFlag.get(by)!);
      return [
        { value: false, count: result.size - yes },
        { value: true, count: yes },
      ]
        .filter((v) => v.count > 0)
        .sort((a, b) => b.count - a.count);
    }
    const counts = new Map<string | number, number>();
    const country = countryCode === null ? undefined : this.countryCode.get(countryCode);
    const cities = country === undefined ? null : (this.citiesOf.get(country) ?? new Set<number>());
    const values =
      by === 'category' ? this.categories.length : by === 'country' ? this.countries.length : (cities?.size ?? this.byCity.size);
    if (result.size < values * 8) {
      // Few matches: read each one's value.
      const column = by === 'category' ? this.cat : by === 'country' ? this.country : this.city;
      for (const s of result.toUint32Array()) {
        const v = column[s]!;
        if (v === NONE) continue;
        const value = by === 'category' ? this.categories[v]! : by === 'country' ? this.countries[v]! : v;
        counts.set(value, (counts.get(value) ?? 0) + 1);
      }
    } else {
      const bitmaps: Array<[string | number, RoaringBitmap32]> =
        by === 'category'
          ? this.categories.map((c, i) => [c, this.byCategory[i]!])
          : by === 'country'
            ? this.countries.map((c, i) => [c, this.byCountry[i]!])
            : cities
              ? [...cities].map((c) => [c, this.byCity.get(c)!])
              : [...this.byCity];
      for (const [value, bitmap] of bitmaps) {
        const n = result.andCardinality(bitmap);
        if (n > 0) counts.set(value, n);
      }
    }
    return [...counts]
      .map(([value, count]) => ({ value, count }))
      .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  }

  /** Bytes the index holds: its bitmaps (serialized size, close to their memory) and its per-place arrays. */
  bytes(): number {
    let total = 0;
    for (const b of this.allBitmaps()) total += b.getSerializationSizeInBytes('croaring');
    const arrays = [
      this.extId,
      this.key,
      this.cat,
      this.city,
      this.country,
      this.rating,
      this.bits,
      this.slotOf,
      ...Object.values(this.status),
      ...Object.values(this.score),
    ];
    for (const a of arrays) total += a.byteLength;
    return total + this.text.bytes();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const b of this.allBitmaps()) b.dispose();
    this.text.dispose();
  }

  private allBitmaps(): RoaringBitmap32[] {
    return [
      ...this.byCategory,
      ...this.byCountry,
      ...this.byCity.values(),
      ...this.byRating.values(),
      ...this.byFlag.values(),
      ...Object.values(this.byStatus).flat(),
      ...[...this.thresholds.values()].map((t) => t.bitmap),
    ];
  }

  private keyOf(s: number): OrderKey {
    return { key: this.key[s]!, id: this.extId[s]! };
  }

  /** The first slot of the sorted region after `after` (the order is descending by key, then by id). */
  private sortedPositionAfter(after: OrderKey): number {
    let lo = 0;
    let hi = this.sorted;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(after, this.keyOf(mid))) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  private fill(s: number, f: PlaceFacts): void {
    this.extId[s] = f.id;
    this.key[s] = f.review_key;
    this.cat[s] = f.category === null ? NONE : this.codeOf(f.category, this.categories, this.categoryCode, this.byCategory);
    this.country[s] = f.country_code === null ? NONE : this.codeOf(f.country_code, this.countries, this.countryCode, this.byCountry);
    this.city[s] = f.city_id ?? NONE;
    if (f.city_id !== null && this.country[s] !== NONE) {
      let cities = this.citiesOf.get(this.country[s]!);
      if (!cities) this.citiesOf.set(this.country[s]!, (cities = new Set()));
      cities.add(f.city_id);
    }
    if (f.city_id !== null && !this.byCity.has(f.city_id)) this.byCity.set(f.city_id, new RoaringBitmap32());
    this.rating[s] = f.rating ?? Number.NaN;
    if (f.rating !== null && !this.byRating.has(f.rating)) this.byRating.set(f.rating, new RoaringBitmap32());
    let bits = 0;
    allFlags.forEach((name, i) => {
      if (f[name] === 1) bits |= 1 << i;
    });
    this.bits[s] = bits;
    for (const dim of statusDimNames) {
      const value = f[dim];
      this.status[dim][s] = value === null ? NONE : (statusDims[dim] as readonly string[]).indexOf(value);
    }
    for (const dim of scoreDims) this.score[dim][s] = f[dim] ?? Number.NaN;
    this.slotOf[f.id] = s;
    this.places++;
    for (const extension of this.extensions) extension.fill(s, f);
  }

  /** Every bitmap slot `s` belongs to, from its stored values. */
  private bitmapsOf(s: number): RoaringBitmap32[] {
    const out: RoaringBitmap32[] = [];
    if (this.cat[s] !== NONE) out.push(this.byCategory[this.cat[s]!]!);
    if (this.country[s] !== NONE) out.push(this.byCountry[this.country[s]!]!);
    if (this.city[s] !== NONE) out.push(this.byCity.get(this.city[s]!)!);
    if (!Number.isNaN(this.rating[s])) out.push(this.byRating.get(this.rating[s]!)!);
    allFlags.forEach((name, i) => {
      if (this.bits[s]! & (1 << i)) out.push(this.byFlag.get(name)!);
    });
    for (const dim of statusDimNames) if (this.status[dim][s] !== NONE) out.push(this.byStatus[dim][this.status[dim][s]!]!);
    for (const { dim, min, bitmap } of this.thresholds.values()) if (this.score[dim][s]! >= min) out.push(bitmap);
    return out;
  }

  private codeOf(value: string, values: string[], codes: Map<string, number>, bitmaps: RoaringBitmap32[]): number {
    let code = codes.get(value);
    if (code === undefined) {
      code = values.length;
      values.push(value);
      codes.set(value, code);
      bitmaps.push(new RoaringBitmap32());
    }
    return code;
  }

  private ensureCapacity(slots: number, maxId: number): void {
    if (maxId >= this.slotOf.length) {
      const next = new Int32Array(Math.max(maxId + 1, Math.ceil(this.slotOf.length * 1.5))).fill(NONE);
      next.set(this.slotOf);
      this.slotOf = next;
    }
    if (slots <= this.capacity) return;
    const capacity = Math.max(slots, Math.ceil(this.capacity * 1.5), 1024);
    const grow = <T extends Int32Array | Float64Array | Uint8Array | Int8Array>(a: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(a);
      return next;
    };
    this.extId = grow(this.extId, (n) => new Int32Array(n));
    this.key = grow(this.key, (n) => new Float64Array(n));
    this.cat = grow(this.cat, (n) => new Int32Array(n));
    this.city = grow(this.city, (n) => new Int32Array(n));
    this.country = grow(this.country, (n) => new Int32Array(n));
    this.rating = grow(this.rating, (n) => new Float64Array(n));
    this.bits = grow(this.bits, (n) => new Uint8Array(n));
    for (const dim of statusDimNames) this.status[dim] = grow(this.status[dim], (n) => new Int8Array(n));
    for (const dim of scoreDims) this.score[dim] = grow(this.score[dim], (n) => new Float64Array(n));
    this.capacity = capacity;
  }
}
