import { placeContacts } from '../../contacts/contacts.ts';
import { internationalPhone } from '../../contacts/evidence.ts';
import type { EmailTrust, PhoneTrust, StoredTrust, WebsiteTrust } from '../../contacts/trust.types.ts';
import {
  type Place,
  type PlaceField,
  type PublicPlaceRow,
  type PublicPlaceTuple,
  pickFields,
  placeRowToPlace,
  placeTupleToRow,
  publicColumnIndex,
} from '../../places/places.schema.ts';

/**
 * What every export format reads: batches of places as `PublicPlaceTuple`s (arrays in
 * `publicPlaceColumns` order, no object per row), in the search's order.
 */
export type PlaceBatches = AsyncIterable<readonly PublicPlaceTuple[]>;

/** One cell of a tabular export (CSV, xlsx): numbers stay numbers, lists are joined, null is an empty cell. */
export type Cell = string | number | null;

/** Separator of list values (categories) inside one cell. */
export const listSeparator = ';';

/** The public shape of each row, narrowed to the chosen fields, batch by batch. */
export async function* pickedPlaces(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<Partial<Place>[]> {
  for await (const rows of batches) yield rows.map((t) => pickFields(placeRowToPlace(placeTupleToRow(t)), fields));
}

/** The column each public field is read from (`placeRowToPlace` in the other direction); `contacts` is several cells. */
const fieldColumn: { [F in Exclude<PlaceField, 'contacts'>]: keyof PublicPlaceRow } = {
  id: 'public_id',
  name: 'name',
  category: 'category',
  categories: 'categories',
  phone: 'phone',
  phone_e164: 'phone_e164',
  website: 'website',
  email: 'email',
  rating: 'rating',
  review_count: 'review_count',
  address: 'address',
  street: 'street',
  housenumber: 'housenumber',
  postcode: 'postcode',
  city: 'city',
  region: 'region',
  country: 'country_code',
  lat: 'lat',
  lon: 'lon',
  opening_hours: 'opening_hours',
  source: 'source',
  updated_at: 'updated_at',
  first_seen_at: 'first_seen_at',
  status: 'closed_reason',
  closed_at: 'closed_at',
  sources: 'sources',
  lead_score: 'lead_score',
};

const sourceAt = publicColumnIndex.source;
const sourceIdAt = publicColumnIndex.source_id;
const sourcesAt = publicColumnIndex.sources;
const sourceContactsAt = publicColumnIndex.source_contacts;
const foundContactsAt = publicColumnIndex.found_contacts;
const leadScoreAt = publicColumnIndex.lead_score;

/**
 * The `sources` cell: `source:source_id` of each record of the place, joined like a list (a place of one
 * record has no `sources` column: its own source and id).
 */
export function sourcesCell(t: PublicPlaceTuple): string {
  const list = t[sourcesAt] as string | null;
  if (list === null) return `${t[sourceAt] as string}:${t[sourceIdAt] as string}`;
  return (JSON.parse(list) as { source: string; source_id: string }[]).map((s) => `${s.source}:${s.source_id}`).join(listSeparator);
}

/**
 * A tabular export's columns for `contacts`: the lists of every email, phone (E.164) and social profile
 * URL, joined like a list, and the contact page; then what the trust pass says of the place's best email, best
 * phone and website (highest confidence: the value searches filter on) and when a value was last checked. Where
 * each comes from, and the evidence of every value, is in the JSON formats.
 */
export const contactColumns = [
  'emails',
  'phones',
  'socials',
  'contact_url',
  'email_status',
  'email_confidence',
  'phone_type',
  'phone_confidence',
  'website_status',
  'website_confidence',
  'verified_at',
] as const;

/** The header of a tabular export: each field's name, `contacts` as its four columns. */
export function tabularHeader(fields: readonly PlaceField[]): string[] {
  return fields.flatMap((f) => (f === 'contacts' ? [...contactColumns] : [f]));
}

/** The contacts of a tuple, read once for its four cells (and not at all for the many places without any). */
let lastTuple: PublicPlaceTuple | undefined;
let lastPublic: ReturnType<typeof placeContacts> | undefined;
function contactsOf(t: PublicPlaceTuple): ReturnType<typeof placeContacts> | null {
  if (t[sourceContactsAt] === null && t[foundContactsAt] === null) return null;
  if (t !== lastTuple) {
    lastTuple = t;
    lastPublic = placeContacts(placeTupleToRow(t));
  }
  return lastPublic!;
}

const contactTrustAt = publicColumnIndex.contact_trust;

/** The best value of each kind (highest confidence, the first on a tie) of a tuple's `contact_trust`, read once for its cells. */
let lastTrustTuple: PublicPlaceTuple | undefined;
let lastBest: { email?: EmailTrust; phone?: PhoneTrust; website?: WebsiteTrust; verifiedAt: string | null } | undefined;
function bestOf(t: PublicPlaceTuple): NonNullable<typeof lastBest> {
  if (t !== lastTrustTuple) {
    lastTrustTuple = t;
    const json = t[contactTrustAt] as string | null;
    const trust = json === null ? null : (JSON.parse(json) as StoredTrust);
    const best = <V extends { confidence: number }>(values: V[] | undefined): V | undefined =>
      values?.reduce<V | undefined>((b, v) => (b === undefined || v.confidence > b.confidence ? v : b), undefined);
    const checked = [...(trust?.emails ?? []), ...(trust?.websites ?? [])].map((v) => v.checked_at).filter((c) => c !== null);
    lastBest = {
      email: best(trust?.emails),
      phone: best(trust?.phones),
      website: best(trust?.websites),
      verifiedAt: checked.length > 0 ? checked.reduce((a, b) => (a > b ? a : b)) : null,
    };
  }
  return lastBest!;
}

const joined = (items: string[]): Cell => (items.length > 0 ? items.join(listSeparator) : null);

/** Cells computed from several columns: contacts, and the email and phone a website may have filled. */
const computedCells: Partial<Record<string, (t: PublicPlaceTuple) => Cell>> = {
  sources: sourcesCell,
  email: (t) => (t[foundContactsAt] === null ? (t[publicColumnIndex.email] as Cell) : contactsOf(t)!.email),
  phone: (t) =>
    t[foundContactsAt] === null
      ? (internationalPhone(t[publicColumnIndex.phone_e164] as string | null) ?? (t[publicColumnIndex.phone] as Cell))
      : contactsOf(t)!.phone,
  phone_e164: (t) => (t[foundContactsAt] === null ? (t[publicColumnIndex.phone_e164] as Cell) : contactsOf(t)!.phone_e164),
  emails: (t) => {
    const c = contactsOf(t);
    return c ? joined(c.contacts.emails.map((e) => e.address)) : (t[publicColumnIndex.email] as Cell);
  },
  phones: (t) => {
    const c = contactsOf(t);
    return c ? joined(c.contacts.phones.map((p) => p.e164 ?? p.as_written ?? '')) : (t[publicColumnIndex.phone_e164] as Cell);
  },
  socials: (t) => {
    const c = contactsOf(t);
    return c ? joined(c.contacts.socials.map((s) => s.url)) : null;
  },
  contact_url: (t) => contactsOf(t)?.contacts.contact_url ?? null,
  email_status: (t) => bestOf(t).email?.status ?? null,
  email_confidence: (t) => bestOf(t).email?.confidence ?? null,
  phone_type: (t) => bestOf(t).phone?.type ?? null,
  phone_confidence: (t) => bestOf(t).phone?.confidence ?? null,
  website_status: (t) => bestOf(t).website?.status ?? null,
  website_confidence: (t) => bestOf(t).website?.confidence ?? null,
  verified_at: (t) => bestOf(t).verifiedAt,
  // Before the trust pass has seen a place, its score is judged from the row, as the JSON formats show it.
  lead_score: (t) => (t[leadScoreAt] as number | null) ?? placeContacts(placeTupleToRow(t)).lead_score,
};

/** How to read the chosen fields' cells from a tuple: the column of each, and whether it is a list (a JSON array to join). */
export interface CellPlan {
  columns: number[];
  isList: boolean[];
  /** What a null column reads as (`status`: a place without a closed reason is open), else null. */
  ifNull: Cell[];
  /** A cell made from several columns (`sources`, `contacts`), else null: the column as it is. */
  computed: (((t: PublicPlaceTuple) => Cell) | null)[];
}

/** The plan of a tabular export's cells, one per column of `tabularHeader(fields)`. */
export function cellPlan(fields: readonly PlaceField[]): CellPlan {
  const names = tabularHeader(fields);
  return {
    columns: names.map((f) => (f in fieldColumn ? publicColumnIndex[fieldColumn[f as keyof typeof fieldColumn]] : -1)),
    isList: names.map((f) => f === 'categories'),
    ifNull: names.map((f) => (f === 'status' ? 'open' : null)),
    computed: names.map((f) => computedCells[f] ?? null),
  };
}

/** The cell of column `i` of a plan: null stays null (or the field's `ifNull`), numbers stay numbers, a list is joined. */
export function tupleCell(t: PublicPlaceTuple, plan: CellPlan, i: number): Cell {
  const computed = plan.computed[i];
  if (computed) return computed(t);
  const v = t[plan.columns[i]!] as Cell;
  if (v === null || v === undefined) return plan.ifNull[i]!;
  return plan.isList[i] && typeof v === 'string' ? joinedList(v) : v;
}

/** The cells of each row for tabular formats, batch by batch (no place object in between). */
export async function* placeCellBatches(batches: PlaceBatches, fields: readonly PlaceField[]): AsyncGenerator<Cell[][]> {
  const plan = cellPlan(fields);
  for await (const rows of batches) yield rows.map((t) => plan.columns.map((_, i) => tupleCell(t, plan, i)));
}

const joinedLists = new Map<string, string>();
const maxJoinedLists = 10_000;

/**
 * A JSON array of strings (the `categories` column) as one cell. Places share a few thousand distinct
 * category lists, so each is parsed once and remembered (the map is emptied if it ever grows large).
 */
export function joinedList(json: string): string {
  let joined = joinedLists.get(json);
  if (joined === undefined) {
    joined = (JSON.parse(json) as string[]).join(listSeparator);
    if (joinedLists.size >= maxJoinedLists) joinedLists.clear();
    joinedLists.set(json, joined);
  }
  return joined;
}

/**
 * Spreadsheet formula injection (CSV only; xlsx cells are typed, never formulas).
 *
 * A text cell is neutralised with a leading `'` when its first character is `=`, `+`, `-`, `@`
 * (or their full-width forms), a tab or a carriage return, or when it starts with spaces or line
 * breaks followed by one of `=+-@` (some spreadsheets trim before parsing). Exception: a plain phone
 * number stays as it is, so `+33 1 42 68 53 00` and E.164 `+4989219989` survive a round trip. A plain
 * phone number is `+`, then a digit, then only digits, spaces and `( ) . - /`, with 6 to 15 digits
 * (E.164 allows at most 15). Such a value has no letters, quotes, `!`, `|` or `:`, so it cannot call a
 * function, reference another cell or sheet, or reach DDE: at worst a spreadsheet reads it as arithmetic
 * on literals. Numbers (rating, lat/lon) are written as numbers and never guarded.
 */
export function guardFormula(value: string): string {
  // Most cells start with a letter or a digit: their first character settles it without the patterns.
  const first = value.charCodeAt(0);
  if (
    first !== 9 &&
    first !== 10 &&
    first !== 13 &&
    first !== 32 &&
    first !== 43 &&
    first !== 45 &&
    first !== 61 &&
    first !== 64 &&
    first < 0xff0b
  )
    return value;
  return startsLikeFormula.test(value) && !isPlainPhoneNumber(value) ? `'${value}` : value;
}

const startsLikeFormula = /^(?:[\t\r]|[ \n\r]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;
const phoneShape = /^\+\d[\d ().\-/]*$/;

export function isPlainPhoneNumber(value: string): boolean {
  if (!phoneShape.test(value)) return false;
  let digits = 0;
  for (let i = 1; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
  }
  return digits >= 6 && digits <= 15;
}
