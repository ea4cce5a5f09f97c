import { loadLocator, normalisePhone } from '../geo/geo.ts';
import { loadClassifier } from '../taxonomy/taxonomy.ts';
import type { Enricher } from './enrich.ts';

let enricher: Enricher | undefined;

/** Taxonomy, gazetteer and phone library, loaded once per thread (about 2 s of CPU). */
export function loadEnricher(): Enricher {
  enricher ??= { classifier: loadClassifier(), locator: loadLocator(), normalisePhone };
  return enricher;
}
