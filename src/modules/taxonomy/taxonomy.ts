import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { type CategoryIndex, createCategoryIndex, namesInMemory } from './category-index.ts';
import { loadTaxonomy, loadTaxonomyNames, readTaxonomyNames, taxonomyVersion } from './taxonomy.build.ts';
import { categoryNameRows, findTaxonomyVersion, SqlCategoryNames, taxonomyStore } from './taxonomy.repository.ts';

export type { Category, CategoryCandidate, CategoryIndex, ResolveResult } from './category-index.ts';
export { loadClassifier } from './classifier.ts';
export { type FieldLabel, readFieldLabels } from './taxonomy.build.ts';

/**
 * Writes the category taxonomy (from @openstreetmap/id-tagging-schema) into `categories` and `category_names`,
 * in one transaction, only when the package version (or the derivation rules) changed since the last run:
 * otherwise it reads one row and returns `changed: false`. `rows` counts both tables.
 */
export async function syncTaxonomy(db: Db): Promise<{ version: string; rows: number; changed: boolean }> {
  const version = taxonomyVersion();
  const current = await findTaxonomyVersion(db);
  if (current?.version === version) return { version, rows: current.rowCount, changed: false };
  // Built outside the transaction (reading every translation takes a second), checked again inside it.
  const rows = { categories: loadTaxonomy().categories, names: readTaxonomyNames() };
  return { version, ...(await taxonomyStore(db).replaceUnlessCurrent(version, rows)) };
}

let index: CategoryIndex | undefined;

/**
 * The resolver for `type=` and category listings with every language's names in memory, built from the
 * package once per process (~1.5 s, ~30 MB of heap). Servers use `categoryIndexFor(db)`.
 */
export function loadCategoryIndex(): CategoryIndex {
  index ??= createCategoryIndex(loadTaxonomy(), namesInMemory(loadTaxonomyNames()));
  return index;
}

const indexes = new WeakMap<Db, CategoryIndex>();

/** SQLite whose `category_names` holds this taxonomy version answers synchronously; PostgreSQL's driver cannot. */
const sqlCategoryNames = byDialect<SqlCategoryNames | null>({
  sqlite: (db) => (SqlCategoryNames.isCurrent(db.sqlite, taxonomyVersion()) ? new SqlCategoryNames(db.sqlite) : null),
  postgres: () => null,
});

/**
 * The category index for a database: on SQLite whose `category_names` holds this taxonomy version, one that
 * reads the names from there (`SqlCategoryNames`; same answers, a few MB instead of ~30); otherwise, on
 * PostgreSQL (the resolver answers synchronously) or a database never synced, `loadCategoryIndex()`.
 */
export function categoryIndexFor(db: Db): CategoryIndex {
  let made = indexes.get(db);
  if (!made) {
    const names = sqlCategoryNames(db);
    made = names ? createCategoryIndex(loadTaxonomy(), names) : loadCategoryIndex();
    indexes.set(db, made);
  }
  return made;
}

/**
 * The categories' own names and aliases in every locale the taxonomy ships, as written: from `category_names`,
 * or from the package when the table was never filled (a database only migrated).
 */
export async function categoryNamesInEveryLocale(db: Db): Promise<Array<{ slug: string; lang: string; name: string }>> {
  const rows = await categoryNameRows(db);
  if (rows.length > 0) return rows;
  return loadTaxonomyNames()
    .filter((n) => n.kind === 'name' || n.kind === 'alias')
    .map((n) => ({ slug: n.slug, lang: n.lang, name: n.name }));
}
