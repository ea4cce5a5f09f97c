// What geo offers the import's enrich stage (modules/importers/enricher.ts), defined by geo so it imports no importer.

export interface CityAssignment {
  /** Display name: the address city as written, else the gazetteer city's name. */
  city: string | null;
  cityId: number | null;
  /** `address`: the address city matched the gazetteer; `address_unmatched`: kept as written, not found
   *  (filed under the nearest populated place when there is a point, as `nearest`);
   *  `nearest`: no address city, the nearest populated place was taken; null: no city and no coordinates. */
  source: 'address' | 'address_unmatched' | 'nearest' | null;
  distanceM: number | null;
  /** Country code: with a point, the country whose borders hold it (the input's near a border); else the input's, or the assigned city's. */
  countryCode: string | null;
}

/** Resolves countries and cities for places. */
export interface PlaceLocator {
  /** ISO code from a code or a name in any language the data knows; undefined when unknown. */
  countryCode(codeOrName: string): string | undefined;
  assignCity(input: { city?: string | null; countryCode?: string | null; lat?: number | null; lon?: number | null }): CityAssignment;
}

/** E.164 form of a phone number, or null when it is not a valid number. */
export type PhoneNormaliser = (raw: string, countryCode: string | null) => string | null;
