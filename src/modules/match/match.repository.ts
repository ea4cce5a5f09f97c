import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { placeContactValues } from '../contacts/contacts.ts';
import { type Place, type PublicPlaceRow, placeStatus, publicPlaceColumns } from '../places/places.schema.ts';

/** Bound parameters per statement, well under SQLite's and PostgreSQL's limits. */
const MAX_PARAMS = 8000;

function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/**
 * The places indexed under each key (conflation's blocking keys, `place_match_keys`): an indexed look-up per
 * key, never a scan. A record of a place of several sources stands for its place (`merged_into`).
 */
export async function placesByKey(
  db: Db,
  keys: readonly string[],
): Promise<{ byKey: Map<string, number[]>; points: Map<number, [number, number]> }> {
  const out = new Map<string, number[]>();
  const points = new Map<number, [number, number]>();
  for (const part of slices([...new Set(keys)], MAX_PARAMS)) {
    const rows = await db.kysely
      .selectFrom('place_match_keys as k')
      .innerJoin('places as p', 'p.id', 'k.place_id')
      .select(['k.key', sql<number>`coalesce(p.merged_into, p.id)`.as('place_id'), 'p.lat', 'p.lon'])
      .where('k.key', 'in', part)
      .execute();
    for (const r of rows) {
      const id = Number(r.place_id);
      const list = out.get(r.key) ?? [];
      list.push(id);
      out.set(r.key, list);
      if (r.lat !== null && r.lon !== null) points.set(id, [r.lat, r.lon]);
    }
  }
  return { byKey: out, points };
}

/** What the matcher compares of a candidate place. */
const candidateColumns = [
  'id',
  'public_id',
  'name',
  'names',
  'country_code',
  'street',
  'housenumber',
  'address',
  'lat',
  'lon',
  'phone_e164',
  'website_domain',
  'city_id',
] as const;

export interface CandidateRow {
  id: number;
  public_id: string;
  name: string;
  names: string | null;
  country_code: string | null;
  street: string | null;
  housenumber: string | null;
  address: string | null;
  lat: number | null;
  lon: number | null;
  phone_e164: string | null;
  website_domain: string | null;
  city_id: number | null;
}

/** The candidates' columns the matcher compares (a few; the public place is read for the matches only). */
export async function candidateRows(db: Db, ids: readonly number[]): Promise<Map<number, CandidateRow>> {
  const out = new Map<number, CandidateRow>();
  for (const part of slices(ids, MAX_PARAMS)) {
    const rows = (await db.kysely.selectFrom('places').select(candidateColumns).where('id', 'in', part).execute()) as CandidateRow[];
    for (const r of rows) out.set(Number(r.id), r);
  }
  return out;
}

/** The public rows of the matched places. */
export async function publicRows(db: Db, ids: readonly number[]): Promise<Map<number, PublicPlaceRow>> {
  const out = new Map<number, PublicPlaceRow>();
  for (const part of slices(ids, MAX_PARAMS)) {
    const rows = (await db.kysely
      .selectFrom('places')
      .select(publicPlaceColumns)
      .where('id', 'in', part)
      .execute()) as unknown as PublicPlaceRow[];
    for (const r of rows) out.set(Number(r.id), r);
  }
  return out;
}

/** What a match job reads of a matched place: its appended columns' sources (`listPlaceOf`). */
const listPlaceColumns = [
  'id',
  'public_id',
  'name',
  'category',
  'closed_reason',
  'phone',
  'phone_e164',
  'email',
  'website',
  'address',
  'street',
  'housenumber',
  'postcode',
  'city',
  'source_contacts',
  'found_contacts',
  'enrich_basis',
  'contact_trust',
] as const;
export type ListPlaceRow = Pick<PublicPlaceRow, (typeof listPlaceColumns)[number]>;

/** The columns of the matched places a match job writes. */
export async function listPlaceRows(db: Db, ids: readonly number[]): Promise<Map<number, ListPlaceRow>> {
  const out = new Map<number, ListPlaceRow>();
  for (const part of slices(ids, MAX_PARAMS)) {
    const rows = (await db.kysely.selectFrom('places').select(listPlaceColumns).where('id', 'in', part).execute()) as ListPlaceRow[];
    for (const r of rows) out.set(Number(r.id), r);
  }
  return out;
}

/** A matched place as a match job writes it: the public place's values of these fields (`placeRowToPlace`'s rules). */
export interface ListPlace {
  id: string;
  name: string;
  category: string | null;
  status: Place['status'];
  phone: string | null;
  email: string | null;
  website: string | null;
  socials: string[];
  address: string | null;
  street: string | null;
  housenumber: string | null;
  postcode: string | null;
  city: string | null;
}

export function listPlaceOf(row: ListPlaceRow): ListPlace {
  const contacts = placeContactValues(row);
  return {
    id: row.public_id,
    name: row.name,
    category: row.category,
    status: placeStatus(row.closed_reason),
    phone: contacts.phone,
    email: contacts.email,
    website: row.website,
    socials: contacts.socials,
    address: row.address,
    street: row.street,
    housenumber: row.housenumber,
    postcode: row.postcode,
    city: row.city,
  };
}
