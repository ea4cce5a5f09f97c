import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { loadGazetteer } from '../geo/gazetteer.ts';
import { loadCategoryIndex, type CategoryIndex } from '../taxonomy/taxonomy.ts';
import type { ApiReadTasks } from './read-tasks.ts';
import type { SearchDeps, TypeResolver } from './search.service.ts';

/** `type=` through the taxonomy's category index: a name, alias or term in any language, plurals, slugs, OSM tags. */
export function typeResolver(index: CategoryIndex): TypeResolver {
  return {
    resolve(term, lang) {
      const { slug } = index.resolve(term, lang ?? undefined);
      return slug ? { slug, name: index.name(slug, lang ?? undefined) ?? slug } : null;
    },
    suggest: (term, lang) => index.resolve(term, lang ?? undefined).candidates.map((c) => ({ term: c.name, slug: c.slug })),
    descendants: (slug) => index.subtree(slug),
  };
}

/** The process-wide resolver (the category index is built once, about 1.5 s, on first use). */
export async function loadTypeResolver(): Promise<TypeResolver> {
  return typeResolver(loadCategoryIndex());
}

/** What the search service needs, wired to the taxonomy and the gazetteer: for the API and the dashboard alike. */
export function createSearchDeps(db: Db, reads: ReadPool<ApiReadTasks>): SearchDeps {
  return { db, reads, types: loadTypeResolver, places: loadGazetteer };
}
