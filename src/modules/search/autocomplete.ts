import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { namesOfCities } from '../geo/geo.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { categoryNamesInEveryLocale } from '../taxonomy/taxonomy.ts';
import { foldQuery, nameKeys, PrefixIndex } from './autocomplete-index.ts';
import type { SearchEngine } from './engine/search-engine.ts';
import { noCriteria } from './query/criteria.ts';
import type { ApiReadTasks } from './read-tasks.ts';

/** Places' names as suggestions: one entry per folded name, most places first. */
interface NameEntries {
  /** The name as the first place carrying it writes it. */
  names: string[];
  counts: Int32Array;
  /** The public id of the most reviewed place carrying it. */
  placeIds: string[];
  index: PrefixIndex;
}

/** The cities with places, most places first, keyed by every name (exonyms too). */
interface CityEntries {
  ids: Int32Array;
  names: string[];
  countries: string[];
  counts: Int32Array;
  /** Each city's folded names, to tell which one a prefix found. */
  norms: string[][];
  index: PrefixIndex;
}

/** The categories' names in every locale, one entry each (ranked at query time: counts depend on the country). */
interface CategoryEntries {
  slugs: string[];
  names: string[];
  langs: string[];
  index: PrefixIndex;
}

/** What one build holds: everything for one places version. */
export interface AutocompleteData {
  version: number;
  names: NameEntries;
  namesByCountry: Map<string, NameEntries>;
  cities: CityEntries;
  categories: CategoryEntries;
  /** Places per category slug, its subtree included (what `type=` finds), per country ('' for all); filled on use. */
  categoryCounts: Map<string, Promise<Map<string, number>>>;
  builtMs: number;
}

/**
 * Places read per statement while building, in the read pool; the main thread folds and counts each batch,
 * then lets requests through before the next.
 */
const BUILD_BATCH = 10_000;
/** A rebuild waits at least this many times the last one's duration after it: at most a tenth of a core. */
const REBUILD_SPACING = 9;

export interface AutocompleteOptions {
  db: Db;
  /** Where the names are read, off the event loop's thread. */
  reads: ReadPool<ApiReadTasks>;
  engine: SearchEngine;
  /** How often a request may check the places version (the engine's poll period). */
  checkMs: number;
  log?: { warn(obj: unknown, msg: string): void; info(obj: unknown, msg: string): void };
}

/**
 * The suggestions of `GET /api/v2/autocomplete`, held in memory and rebuilt when the catalog changed. Owned by
 * the search object (one per process). Built on first use (or at `warm`); each request then checks, at most
 * once per `checkMs` and in the background, whether the places version moved, and rebuilds when it did,
 * answering from the previous build meanwhile. A rebuild waits `REBUILD_SPACING` times the last one's duration
 * after it, so a catalog that changes all the time costs a bounded share of the server's CPU.
 */
export class Autocomplete {
  private data: AutocompleteData | null = null;
  private building: Promise<AutocompleteData> | undefined;
  private checking = false;
  private checkedAt = 0;
  private nextBuildAt = 0;

  constructor(private readonly options: AutocompleteOptions) {}

  /** The current build (the first one awaited), a check for a newer catalog started when one is due. */
  async current(): Promise<AutocompleteData> {
    const data = this.data;
    if (!data) return this.build();
    if (!this.checking && !this.building && Date.now() - this.checkedAt >= this.options.checkMs) {
      this.checking = true;
      this.checkedAt = Date.now();
      void this.refresh()
        .catch((error) => this.options.log?.warn({ err: error }, 'autocomplete could not follow the catalog'))
        .finally(() => {
          this.checking = false;
        });
    }
    return data;
  }

  /**
   * Rebuilds when the places version moved since the current build and the spacing allows it; `force`: now,
   * whatever the version (the bench times a rebuild).
   */
  async refresh(options: { force?: boolean } = {}): Promise<void> {
    if (!this.data || options.force) {
      await this.build();
      return;
    }
    if (Date.now() < this.nextBuildAt) return;
    if ((await placesVersion(this.options.db)) !== this.data.version) await this.build();
  }

  /** Starts the first build in the background (a server, once it listens). */
  warm(): void {
    void this.build().catch((error) => this.options.log?.warn({ err: error }, 'autocomplete could not be built'));
  }

  /** Places, cities and categories held (bench, `/readyz` leaves it out). */
  stats(): { version: number | null; names: number; keys: number; cities: number; bytes: number; builtMs: number | null } {
    const d = this.data;
    if (!d) return { version: null, names: 0, keys: 0, cities: 0, bytes: 0, builtMs: null };
    let bytes = d.names.index.bytes() + d.cities.index.bytes() + d.categories.index.bytes();
    for (const e of d.namesByCountry.values()) bytes += e.index.bytes();
    return {
      version: d.version,
      names: d.names.names.length,
      keys: d.names.index.size,
      cities: d.cities.ids.length,
      bytes,
      builtMs: d.builtMs,
    };
  }

  private build(): Promise<AutocompleteData> {
    const previous = this.data;
    this.building ??= buildAutocomplete(this.options, previous?.categories)
      .then((data) => {
        this.data = data;
        // The first build reads the taxonomy and warms the read pool: only a rebuild's duration says what the next costs.
        if (previous) this.nextBuildAt = Date.now() + REBUILD_SPACING * data.builtMs;
        return data;
      })
      .finally(() => {
        this.building = undefined;
      });
    return this.building;
  }
}

/** Reads the catalog's names, the engine's counts per city and the taxonomy's names into a new build. */
async function buildAutocomplete(options: AutocompleteOptions, categoriesHeld?: CategoryEntries): Promise<AutocompleteData> {
  const started = performance.now();
  const { db, engine, reads } = options;
  // The version first: a change committed while reading is seen by the next check.
  const version = await placesVersion(db);
  const groups = new Map<string, NameGroup>();
  const byCountry = new Map<string, Map<string, NameGroup>>();
  for (let after = 0; ; ) {
    const batch = await reads.run('namedPlacesAfter', after, BUILD_BATCH);
    if (batch.length === 0) break;
    for (const p of batch) {
      const key = foldQuery(p.name);
      if (key === '') continue;
      addTo(groups, key, p);
      if (p.country_code) {
        let own = byCountry.get(p.country_code);
        if (!own) byCountry.set(p.country_code, (own = new Map()));
        addTo(own, key, p);
      }
    }
    after = batch.at(-1)!.id;
    await yieldToRequests();
  }
  const names = nameEntries(groups);
  const namesByCountry = new Map<string, NameEntries>();
  for (const [country, own] of byCountry) {
    await yieldToRequests();
    namesByCountry.set(country, nameEntries(own));
  }
  // The taxonomy does not change while the process runs: its names are read once.
  const [cities, categories] = await Promise.all([cityEntries(db, engine), categoriesHeld ?? categoryEntries(db)]);
  const data: AutocompleteData = {
    version,
    names,
    namesByCountry,
    cities,
    categories,
    categoryCounts: new Map(),
    builtMs: performance.now() - started,
  };
  options.log?.info({ names: names.names.length, cities: cities.ids.length, version, ms: Math.round(data.builtMs) }, 'autocomplete built');
  return data;
}

/** Lets the requests waiting on the event loop through between two steps of a build. */
const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve));

interface NameGroup {
  name: string;
  count: number;
  placeId: string;
  reviews: number;
}

function addTo(groups: Map<string, NameGroup>, key: string, p: { name: string; public_id: string; review_key: number }): void {
  const g = groups.get(key);
  if (!g) groups.set(key, { name: p.name, count: 1, placeId: p.public_id, reviews: p.review_key });
  else {
    g.count++;
    if (p.review_key > g.reviews) {
      g.reviews = p.review_key;
      g.placeId = p.public_id;
    }
  }
}

/** Groups numbered most places first, then by folded name (a stable order for ties). */
function nameEntries(groups: Map<string, NameGroup>): NameEntries {
  const ranked = [...groups].sort(([ka, a], [kb, b]) => b.count - a.count || (ka < kb ? -1 : ka > kb ? 1 : 0));
  const names = ranked.map(([, g]) => g.name);
  return {
    names,
    counts: Int32Array.from(ranked, ([, g]) => g.count),
    placeIds: ranked.map(([, g]) => g.placeId),
    index: PrefixIndex.build(ranked.length, (e) => nameKeys(ranked[e]![0])),
  };
}

/** The cities with places (the engine's facet by city, open places), keyed by each of their names. */
async function cityEntries(db: Db, engine: SearchEngine): Promise<CityEntries> {
  const facet = await engine.facets(noCriteria, 'city');
  const counted = facet.map((v) => ({ id: Number(v.value), count: v.count })).sort((a, b) => b.count - a.count || a.id - b.id);
  const named = new Map<number, { name: string; country: string; norms: string[] }>();
  for (const row of await namesOfCities(
    db,
    counted.map((c) => c.id),
  )) {
    const city = named.get(row.id);
    if (city) city.norms.push(row.name_norm);
    else named.set(row.id, { name: row.name, country: row.country_code, norms: [row.name_norm] });
  }
  const kept = counted.filter((c) => named.has(c.id));
  const norms = kept.map((c) => {
    const city = named.get(c.id)!;
    // The city's own name first: a prefix of it is shown without `matched`.
    const own = foldQuery(city.name);
    return [own, ...city.norms.filter((n) => n !== own)];
  });
  return {
    ids: Int32Array.from(kept, (c) => c.id),
    names: kept.map((c) => named.get(c.id)!.name),
    countries: kept.map((c) => named.get(c.id)!.country),
    counts: Int32Array.from(kept, (c) => c.count),
    norms,
    index: PrefixIndex.build(kept.length, (e) => norms[e]!.flatMap(nameKeys)),
  };
}

/** Every category name and alias in every locale, keyed by its folded words. */
async function categoryEntries(db: Db): Promise<CategoryEntries> {
  const rows = await categoryNamesInEveryLocale(db);
  return {
    slugs: rows.map((r) => r.slug),
    names: rows.map((r) => r.name),
    langs: rows.map((r) => r.lang),
    index: PrefixIndex.build(rows.length, (e) => nameKeys(rows[e]!.name)),
  };
}
