import type { Db } from '../../infra/db/database.ts';
import type { Classifier } from '../importers/importer.types.ts';

/** Writes the category taxonomy (from @openstreetmap/id-tagging-schema) into `categories` and `category_names`. */
export async function syncTaxonomy(_db: Db): Promise<{ version: string; rows: number; changed: boolean }> {
  throw new Error('syncTaxonomy: not implemented yet');
}

/** The in-memory classifier used by importers. */
export function loadClassifier(): Classifier {
  throw new Error('loadClassifier: not implemented yet');
}
