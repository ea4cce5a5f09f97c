import type { Db } from '../../infra/db/database.ts';
import type { Classifier } from '../importers/importer.types.ts';
import { createCategoryIndex, type CategoryIndex } from './category-index.ts';
import { createClassifier, createTermMatcher } from './classifier.ts';
import { loadEnglishNames, loadTaxonomy, loadTaxonomyNames, taxonomyVersion } from './taxonomy.build.ts';
import { findTaxonomyVersion, taxonomyStore } from './taxonomy.repository.ts';

export type { Category, CategoryCandidate, CategoryIndex, ResolveResult } from './category-index.ts';

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
  const rows = { categories: loadTaxonomy().categories, names: loadTaxonomyNames() };
  return { version, ...(await taxonomyStore(db).replaceUnlessCurrent(version, rows)) };
}

let classifier: Classifier | undefined;

/**
 * The in-memory classifier used by importers, built once per process from the package (English names; other
 * languages are read only if a term matches nothing in English).
 */
export function loadClassifier(): Classifier {
  if (!classifier) {
    const taxonomy = loadTaxonomy();
    classifier = createClassifier(taxonomy, createTermMatcher(taxonomy, loadEnglishNames(), loadTaxonomyNames));
  }
  return classifier;
}

let index: CategoryIndex | undefined;

/** The resolver for the API's `type=` filter and category listings: every language, built once per process (~1.5 s). */
export function loadCategoryIndex(): CategoryIndex {
  index ??= createCategoryIndex(loadTaxonomy(), loadTaxonomyNames());
  return index;
}
