import type { SourceContacts } from '../contacts/contacts.ts';
// The catalog's input, here rather than in modules/importers: taxonomy and geo read it too, and importers read them.

/** One business as a reader found it, in source terms but with the fields already picked out. */
export interface PlaceInput {
  /** Id unique within the source: OSM `n123`/`w45`/`r6`, a Google place id, a Yelp id… */
  sourceId: string;
  name: string;
  /** Alternative and localised names: `{ en: 'Vienna State Opera', de: 'Wiener Staatsoper', alt: ['…'] }`. */
  names?: Record<string, string | string[]>;
  /** Categories as the source writes them: `amenity=restaurant`, `Italian restaurant`, `sandwiches`. */
  sourceCategories: string[];
  /** All OSM tags, when the source is OpenStreetMap (classification matches presets on them). */
  osmTags?: Record<string, string>;
  phone?: string | null;
  website?: string | null;
  email?: string | null;
  street?: string | null;
  housenumber?: string | null;
  postcode?: string | null;
  /** One-line address when the source has one. */
  address?: string | null;
  /** City as written in the address. */
  city?: string | null;
  region?: string | null;
  /** ISO 3166-1 alpha-2 when the source has it. */
  countryCode?: string | null;
  /** Country as a name when the source has no code (`Italy`, `Deutschland`). */
  countryName?: string | null;
  lat?: number | null;
  lon?: number | null;
  rating?: number | null;
  reviewCount?: number | null;
  /** Opening hours kept as the source wrote them (OSM syntax where it is OSM). */
  openingHours?: string | null;
  attributes?: Record<string, unknown>;
  /**
   * Every contact the source gives, in the source's order, beyond the first of each that `phone`, `website`
   * and `email` carry (those are repeated here first): Overture's `phones`/`websites`/`emails`/`socials`,
   * Foursquare's `tel`/`website`/`email`/`facebook_id`/`instagram`/`twitter`, OSM's `contact:*` tags. Socials
   * are profile URLs or `network:handle` (`facebook:12345`, `instagram:cafe_x`). The enrichment module
   * (`modules/enrichment/`) normalises and stores them as the place's source contacts.
   */
  contacts?: SourceContacts;
  /** The source says the business is closed (Yelp `is_open: 0`, Overture `operating_status` other than open, OSM `disused=yes`…). */
  closed?: boolean;
  /**
   * The source says the record is no open business to list (Foursquare's unresolved `doesnt_exist`,
   * `privatevenue`…): the import skips it with this reason, once it knows where the place is (so a place
   * outside the country imported counts as outside, not as flagged).
   */
  withheld?: string;
}
