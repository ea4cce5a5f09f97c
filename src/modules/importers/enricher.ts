import { loadGazetteer } from '../geo/gazetteer.ts';
import { normalisePhone } from '../geo/phone.ts';
import { loadClassifier } from '../taxonomy/classifier.ts';
import type { Enricher } from './enrich.ts';

let enricher: Enricher | undefined;

/**
 * Taxonomy, gazetteer and phone library, loaded once per thread. Imported from their own files, not from the
 * modules' entry points (`geo.ts`, `taxonomy.ts`), which also carry the SQL side: the import worker would load
 * Kysely for nothing.
 */
export function loadEnricher(): Enricher {
  enricher ??= { classifier: loadClassifier(), locator: loadGazetteer(), normalisePhone };
  return enricher;
}
