import { byDialect } from '../../infra/db/dialect.ts';
import { foldText, searchDocument } from '../../infra/text.ts';

/** What the stored text of a place is derived from. */
export interface PlaceTextSource {
  name: string;
  names: string | null;
  city: string | null;
  city_source: string | null;
}

/** The folded address city the index of unmatched cities holds (migration 0027): only for places filed as `address_unmatched`. */
export function cityFold(city: string | null, citySource: string | null): string | null {
  return citySource === 'address_unmatched' && city !== null ? foldText(city) : null;
}

/**
 * The columns SQLite stores beside a place's names and city (migration 0027): its search document, which the
 * triggers copy into `places_fts`, and its folded unmatched city. Derived in the application because SQLite
 * has no accent folding of its own, and stored so that the file needs no function of ours: every other
 * SQLite tool can check, vacuum and write it. Every writer of `name`, `names` or `city` writes them too.
 * PostgreSQL folds in the database (`la_fold`, migration 0011) and has no such columns.
 */
export interface StoredPlaceText {
  /** The columns to write with these values (none on PostgreSQL). */
  of(place: PlaceTextSource): { search_document?: string; city_fold?: string | null };
  /** The columns to copy with a row copied in SQL (none on PostgreSQL). */
  readonly columns: readonly ('search_document' | 'city_fold')[];
}

export const storedPlaceText = byDialect<StoredPlaceText>({
  sqlite: () => ({
    of: (p) => ({ search_document: searchDocument(p.name, p.names), city_fold: cityFold(p.city, p.city_source) }),
    columns: ['search_document', 'city_fold'],
  }),
  postgres: () => ({ of: () => ({}), columns: [] }),
});
