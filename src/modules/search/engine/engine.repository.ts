import { createHash } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../../infra/db/database.ts';
import { byDialect } from '../../../infra/db/dialect.ts';
import { searchDocument } from '../../../infra/text.ts';
import { foundValid, indexedPlaceFacts } from '../../places/place-facts.ts';
import type { PlaceContactFacts } from '../contact-keys.ts';

/**
 * One place as the in-memory index holds it (`indexedPlaceFacts`: 0/1 flags, the default order's key), with
 * its contacts for the contact postings (`contact-index.ts`).
 */
export interface PlaceFacts extends PlaceContactFacts {
  id: number;
  category: string | null;
  city_id: number | null;
  country_code: string | null;
  rating: number | null;
  review_key: number;
  open: number;
  visible: number;
  has_phone: number;
  has_website: number;
  has_email: number;
  has_social: number;
  /** The trust pass's summary (migration 0037): statuses, confidences, lead score; instants as ms since the epoch. */
  email_status: string | null;
  phone_type: string | null;
  website_status: string | null;
  email_confidence: number | null;
  phone_confidence: number | null;
  website_confidence: number | null;
  lead_score: number | null;
  updated_at: number | null;
  verified_at: number | null;
  city: string | null;
  postcode: string | null;
  /** The display name and coordinates, for the name order and the geography (`name-order.ts`, `geo-index.ts`). */
  name: string;
  lat: number | null;
  lon: number | null;
  /** The place's search document (`searchDocument`: its names in search form), for the text index (`text-index.ts`). */
  document: string;
}

/** What enrichment found counts only while it is still valid (`foundValid`): else null, as if never found. */
const stillFound = (column: 'found_phone' | 'found_email') =>
  sql<string | null>`(CASE WHEN ${foundValid} THEN places.${sql.ref(column)} ELSE NULL END)`;

/**
 * The stored search document where the dialect keeps one (SQLite, migration 0027: what `places_fts` holds), else
 * null, and the document is made from the names as SQLite's writers make it.
 */
const storedDocument = byDialect<RawBuilder<string | null>>({
  sqlite: () => sql<string | null>`places.search_document`,
  postgres: () => sql<null>`NULL`,
});

function factsQuery(db: Db) {
  const f = indexedPlaceFacts;
  return db.kysely
    .selectFrom('places')
    .select(['places.id', 'places.category', 'places.city_id', 'places.country_code', 'places.rating', 'places.name', 'places.names'])
    .select(['places.lat', 'places.lon'])
    .select(storedDocument(db).as('search_document'))
    .select([
      'places.email_status',
      'places.phone_type',
      'places.website_status',
      'places.email_confidence',
      'places.phone_confidence',
      'places.website_confidence',
      'places.lead_score',
      'places.updated_at',
      'places.verified_at',
      'places.phone_e164',
      'places.website_domain',
      'places.email',
      'places.street',
      'places.housenumber',
      'places.postcode',
      'places.city',
    ])
    .select([stillFound('found_phone').as('found_phone'), stillFound('found_email').as('found_email')])
    .select([
      f.review_key.as('review_key'),
      f.open.as('open'),
      f.visible.as('visible'),
      f.has_phone.as('has_phone'),
      f.has_website.as('has_website'),
      f.has_email.as('has_email'),
      f.has_social.as('has_social'),
    ]);
}

const asFacts = (r: Record<string, unknown>): PlaceFacts => ({
  id: Number(r.id),
  category: (r.category as string | null) ?? null,
  city_id: r.city_id === null || r.city_id === undefined ? null : Number(r.city_id),
  country_code: (r.country_code as string | null) ?? null,
  rating: r.rating === null || r.rating === undefined ? null : Number(r.rating),
  review_key: Number(r.review_key),
  open: Number(r.open),
  visible: Number(r.visible),
  has_phone: Number(r.has_phone),
  has_website: Number(r.has_website),
  has_email: Number(r.has_email),
  has_social: Number(r.has_social),
  email_status: (r.email_status as string | null) ?? null,
  phone_type: (r.phone_type as string | null) ?? null,
  website_status: (r.website_status as string | null) ?? null,
  email_confidence: numberOrNull(r.email_confidence),
  phone_confidence: numberOrNull(r.phone_confidence),
  website_confidence: numberOrNull(r.website_confidence),
  lead_score: numberOrNull(r.lead_score),
  // The SQL compares the ISO text (`toISOString` form): the same order as the instants.
  updated_at: instantOrNull(r.updated_at),
  verified_at: instantOrNull(r.verified_at),
  phone_e164: text(r.phone_e164),
  website_domain: text(r.website_domain),
  email: text(r.email),
  found_phone: text(r.found_phone),
  found_email: text(r.found_email),
  street: text(r.street),
  housenumber: text(r.housenumber),
  postcode: text(r.postcode),
  city: text(r.city),
  name: String(r.name),
  lat: numberOrNull(r.lat),
  lon: numberOrNull(r.lon),
  document:
    typeof r.search_document === 'string' ? r.search_document : searchDocument(String(r.name ?? ''), (r.names as string | null) ?? null),
});

const numberOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const instantOrNull = (v: unknown): number | null => {
  if (v === null || v === undefined) return null;
  const ms = Date.parse(String(v));
  return Number.isNaN(ms) ? null : ms;
};

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** Up to `limit` places after `afterId`, in id order: the index's build reads the catalog in these batches. */
export async function placeFactsAfter(db: Db, afterId: number, limit: number): Promise<PlaceFacts[]> {
  const rows = await factsQuery(db).where('places.id', '>', afterId).orderBy('places.id').limit(limit).execute();
  return rows.map(asFacts);
}

/** Places read per statement while building. */
const BUILD_BATCH = 50_000;

/** Every place's facts, read in id batches: what a build from the database starts from (`columnsOf` makes them columns). */
export async function everyPlaceFacts(db: Db): Promise<PlaceFacts[][]> {
  const batches: PlaceFacts[][] = [];
  for (let after = 0; ; ) {
    const batch = await placeFactsAfter(db, after, BUILD_BATCH);
    if (batch.length === 0) break;
    batches.push(batch);
    after = batch.at(-1)!.id;
  }
  return batches;
}

/**
 * What the index's facts are made by: a digest of the facts query's SQL and the columns of a row (null on an
 * empty catalog). An index snapshot (`index-snapshot.ts`) made by another query is rebuilt, never read.
 */
export async function factsShape(db: Db): Promise<{ digest: string; columns: string[] } | null> {
  const [sample] = await placeFactsAfter(db, 0, 1);
  if (!sample) return null;
  const digest = createHash('sha256').update(factsQuery(db).compile().sql).digest('hex');
  return { digest, columns: Object.keys(sample) };
}

/** Every row of `places`, as the index counts them (`BitmapIndex.size`). */
export async function countPlaces(db: Db): Promise<number> {
  const row = await db.kysely
    .selectFrom('places')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The places of `ids` that exist (a deleted one is absent). */
export async function placeFactsByIds(db: Db, ids: readonly number[]): Promise<PlaceFacts[]> {
  if (ids.length === 0) return [];
  const rows = await factsQuery(db)
    .where('places.id', 'in', [...ids])
    .execute();
  return rows.map(asFacts);
}

/** Places read at most for one lookup by SQL (a chain's domain can be carried by thousands). */
export const CONTACT_CANDIDATES = 5_000;

/**
 * The open places that may carry one of `keys` (`contact-keys.ts`), for the lookups SQL answers (the SQL engine,
 * or before the index is built): exact on phones, domains and emails; for an address, every place whose house
 * number or street holds the number, which the caller decides by computing the place's keys (`ContactIndex`),
 * as the index would. No index serves these conditions: each is a scan of `places`.
 */
export async function placeFactsCarrying(db: Db, keys: readonly string[]): Promise<PlaceFacts[]> {
  const of = (p: string) => keys.filter((k) => k.startsWith(p)).map((k) => k.slice(p.length));
  const phones = of('p:');
  const domains = of('d:');
  const emails = of('e:');
  const numbers = [...new Set(of('a:').map((k) => /\|(\d+)/.exec(k)?.[1] ?? ''))].filter((n) => n !== '');
  const rows = await factsQuery(db)
    .where('places.closed_at', 'is', null)
    .where('places.merged_into', 'is', null)
    .where((eb) => {
      const any = [];
      if (phones.length > 0) any.push(eb('places.phone_e164', 'in', phones), eb(stillFound('found_phone'), 'in', phones));
      if (domains.length > 0) any.push(eb('places.website_domain', 'in', domains));
      if (emails.length > 0) any.push(eb(sql<string>`lower(places.email)`, 'in', emails), eb(stillFound('found_email'), 'in', emails));
      for (const n of numbers) {
        any.push(
          eb.and([
            eb('places.street', 'is not', null),
            eb.or([
              eb('places.housenumber', 'like', `${n}%`),
              eb.and([eb('places.housenumber', 'is', null), eb('places.street', 'like', `%${n}%`)]),
            ]),
          ]),
        );
      }
      return eb.or(any);
    })
    .orderBy('places.id')
    .limit(CONTACT_CANDIDATES)
    .execute();
  return rows.map(asFacts);
}
