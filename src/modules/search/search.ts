import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { Lru } from '../../infra/lru.ts';
import { loadCountryRows } from '../geo/geo.data.ts';
import { Autocomplete } from './autocomplete.ts';
import { type SearchEngine, SqlSearchEngine } from './engine/search-engine.ts';
import { fuzzyCandidateLimit } from './query/typos.ts';
import type { ApiReadTasks } from './read-tasks.ts';
import { createSearchInserter } from './search.repository.ts';
import type { PlaceNameResolver, SearchDeps, TypeResolver } from './search.types.ts';
import { createPlaceNameResolver, createTypeResolver } from './type-resolver.ts';

/** What the search object reads of the configuration. */
export type SearchConfig = Partial<Pick<Config, 'SEARCH_TYPO_CANDIDATES' | 'OPENING_HOURS_WINDOW_DAYS' | 'SEARCH_ENGINE_POLL_MS'>>;

/** The one search object of a process: what every search service function takes, with every cache of search. */
export interface Search extends SearchDeps {
  /** Makes the resolvers in the background (seconds for the in-memory ones): once a server listens, not on a client's first search. */
  warm(): void;
  /** The suggestions of `GET /api/v2/autocomplete` (`autocomplete.ts`), built at `warm` or on first use. */
  autocomplete: Autocomplete;
}

/** Names resolved per parameters and language, kept (`resolveSearchCached`). */
const resolvedNamesEntries = 5000;

/**
 * The search object, built once in app.ts and shared by the API's routes, the dashboard and (through the routes)
 * MCP: the read pool and the engine it asks, the type and place-name resolvers it makes on first use, and the
 * caches of resolved names and rendered pages. Tests and benches make one per database; `engine` defaults to
 * SQL in the read pool.
 */
export function createSearch(
  db: Db,
  reads: ReadPool<ApiReadTasks>,
  engine: SearchEngine = new SqlSearchEngine({ db, reads }),
  config: SearchConfig = {},
): Search {
  let types: TypeResolver | undefined;
  let places: PlaceNameResolver | undefined;
  const search: Search = {
    db,
    reads,
    engine,
    types: async () => (types ??= createTypeResolver(db)),
    places: () => (places ??= createPlaceNameResolver(db)),
    typoCandidates: config.SEARCH_TYPO_CANDIDATES ?? fuzzyCandidateLimit,
    hoursWindowDays: config.OPENING_HOURS_WINDOW_DAYS,
    resolvedNames: new Lru(resolvedNamesEntries),
    renderedPages: new WeakMap(),
    saveSearch: createSearchInserter(db),
    autocomplete: new Autocomplete({
      db,
      reads,
      engine,
      checkMs: config.SEARCH_ENGINE_POLL_MS ?? 250,
    }),
    warm() {
      setImmediate(() => {
        void search.types();
        loadCountryRows();
        search.autocomplete.warm();
      });
    },
  };
  return search;
}
