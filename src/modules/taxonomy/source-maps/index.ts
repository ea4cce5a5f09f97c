import { FOURSQUARE_CATEGORIES, FOURSQUARE_UNMAPPED } from './foursquare.ts';
import { OVERTURE_CATEGORIES, OVERTURE_UNMAPPED } from './overture.ts';
import type { UnmappedReason } from './unmapped.ts';

/** A slug, or null for a category deliberately left unmapped. */
export type SourceMapEntry = string | null;

/**
 * The explicit category tables of the sources that publish a closed taxonomy, by source name. The classifier
 * looks a term up here before any name matching; a term is a code (`pizza_restaurant`) or a path from the
 * publisher's top level (`Dining and Drinking > Restaurant > Pizzeria`, `food_and_drink > restaurant > …`).
 */
export const SOURCE_MAPS: Record<string, Readonly<Record<string, SourceMapEntry>>> = {
  overture: OVERTURE_CATEGORIES,
  foursquare: FOURSQUARE_CATEGORIES,
};

/** Why each null entry of a source's table is left unmapped (`unmapped.ts`), by source name. */
export const SOURCE_UNMAPPED: Record<string, Readonly<Record<string, UnmappedReason>>> = {
  overture: OVERTURE_UNMAPPED,
  foursquare: FOURSQUARE_UNMAPPED,
};

/**
 * A term looked up in a source's table: the whole term, then its last path segment, then the same for each
 * parent path (`a > b > c`, `c`, `a > b`, `b`, …), so a code a newer release added is filed under its
 * nearest known parent. undefined when nothing on the path is in the table.
 */
export function lookUpSourceMap(table: Readonly<Record<string, SourceMapEntry>>, term: string): SourceMapEntry | undefined {
  const segments = term.split(' > ').map((s) => s.trim());
  while (segments.length > 0) {
    const whole = segments.join(' > ');
    if (Object.hasOwn(table, whole)) return table[whole];
    const last = segments.at(-1)!;
    if (Object.hasOwn(table, last)) return table[last];
    segments.pop();
  }
  return undefined;
}
