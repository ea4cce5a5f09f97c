// Builds the labelled set of issue 32 (bench/data/match-labelled.ndjson) from the OpenStreetMap extracts of
// ../shared/data/osm (© OpenStreetMap contributors, ODbL 1.0): CRM-style records typed the way people type
// them, for businesses the catalog holds and for businesses of the same streets held out of the catalog (any
// match to those is a false positive: the business next door). Deterministic: the same input gives the same
// file. How it is built and why: docs/matching.md, "The labelled set".
// Run: node --import tsx scripts/build-match-set.ts [--seed S --out FILE]
// `--seed` draws another set the same way (other businesses held out, other records, other typing): a check of
// the matcher on a set its thresholds were not chosen on.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { type CountryCode, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { registrableDomain } from '../src/infra/web-domain.ts';

const source = new URL('../../shared/data/osm/osm-pois-all.ndjson.gz', import.meta.url);
const argv = process.argv.slice(2);
const argOf = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const seed = argOf('--seed');
const target = argOf('--out') ?? new URL('../bench/data/match-labelled.ndjson', import.meta.url);

interface OsmPoi {
  id: string;
  extract: string;
  lat: number;
  lon: number;
  name: string | null;
  category: string | null;
  tags: Record<string, string>;
}

/** Each extract's country, main city and the ways people write that city. Tokyo is left out: its names are in Japanese script. */
const extracts: Record<string, { country: CountryCode; city: string | null; cityWritten: string[] }> = {
  'munich-center-2020': { country: 'DE', city: 'München', cityWritten: ['Munich', 'Muenchen', 'München', 'MUNICH'] },
  'porto-2020': { country: 'PT', city: 'Porto', cityWritten: ['Oporto', 'Porto', 'PORTO'] },
  'london-center-2020': { country: 'GB', city: 'London', cityWritten: ['London', 'LONDON'] },
  'helsinki-center-2019': { country: 'FI', city: 'Helsinki', cityWritten: ['Helsinki', 'Helsingfors', 'HELSINKI'] },
  'monaco-2026': { country: 'MC', city: 'Monaco', cityWritten: ['Monaco', 'Mónaco'] },
  'liechtenstein-2024': { country: 'LI', city: null, cityWritten: [] },
  'malta-2018': { country: 'MT', city: null, cityWritten: [] },
  'andorra-2026': { country: 'AD', city: null, cityWritten: [] },
};

/** Legal forms as a CRM appends them, per country. */
const legalSuffixes: Record<string, string[]> = {
  DE: ['GmbH', 'GmbH & Co. KG', 'e.K.', 'KG', 'AG', 'UG (haftungsbeschränkt)'],
  PT: ['Lda', 'Lda.', 'Unipessoal Lda', 'S.A.'],
  GB: ['Ltd', 'Limited', 'Ltd.', 'LLP'],
  FI: ['Oy', 'Oy Ab', 'Ky'],
  MC: ['SARL', 'SAM', 'S.A.M.'],
  LI: ['AG', 'GmbH', 'Anstalt'],
  MT: ['Ltd', 'Limited', 'p.l.c.'],
  AD: ['SL', 'S.L.', 'SA'],
};

/** Street words as people abbreviate them. */
const streetAbbreviations: Array<[RegExp, string[]]> = [
  [/straße\b/i, ['str.', 'strasse', 'str']],
  [/^Rua\b/, ['R.', 'R', 'Rua']],
  [/^Avenida\b/, ['Av.', 'Avda', 'Av']],
  [/\bStreet$/, ['St', 'St.', 'Str']],
  [/\bRoad$/, ['Rd', 'Rd.']],
  [/^Boulevard\b/, ['Bd', 'Bd.', 'Blvd']],
  [/\bkatu$/, ['k.', 'katu']],
];

const businessKeys = ['amenity', 'shop', 'craft', 'office', 'tourism', 'healthcare', 'leisure'];
const notBusinesses = new Set([
  'parking',
  'parking_entrance',
  'bench',
  'waste_basket',
  'bicycle_parking',
  'toilets',
  'drinking_water',
  'recycling',
  'vending_machine',
  'post_box',
  'telephone',
  'fountain',
  'viewpoint',
  'attraction',
  'artwork',
  'information',
  'picnic_site',
  'playground',
  'park',
  'pitch',
  'motorcycle_parking',
  'shelter',
  'clock',
  'atm',
  'taxi',
  'bicycle_rental',
  'charging_station',
  'grave_yard',
  'place_of_worship',
]);

function isBusiness(p: OsmPoi): boolean {
  if (!p.name) return false;
  const key = businessKeys.find((k) => p.tags[k] !== undefined);
  if (!key || notBusinesses.has(p.tags[key]!)) return false;
  return p.tags['addr:street'] !== undefined || phoneOf(p) !== null || websiteOf(p) !== null;
}

const phoneOf = (p: OsmPoi): string | null => p.tags.phone ?? p.tags['contact:phone'] ?? null;
const websiteOf = (p: OsmPoi): string | null => p.tags.website ?? p.tags['contact:website'] ?? p.tags.url ?? null;

/** A number in [0, 1) from a POI id and a purpose: every choice is a function of the id, so the file is the same each run. */
function draw(id: string, purpose: string): number {
  return (
    createHash('sha256')
      .update(seed === undefined ? `${purpose}:${id}` : `${seed}:${purpose}:${id}`)
      .digest()
      .readUInt32BE(0) /
    2 ** 32
  );
}
function pick<T>(id: string, purpose: string, items: readonly T[]): T {
  return items[Math.floor(draw(id, purpose) * items.length)]!;
}

const UMLAUTS: Record<string, string> = { ä: 'ae', ö: 'oe', ü: 'ue', Ä: 'Ae', Ö: 'Oe', Ü: 'Ue', ß: 'ss' };
const stripAccents = (s: string): string => s.normalize('NFKD').replace(/\p{M}+/gu, '');
/** Leading words that say what kind of business it is, which a CRM often leaves out. */
const kindWords = /^(Restaurant|Café|Cafe|Bar|Hotel|Bäckerei|Pizzeria|Apotheke|Restaurante|Ravintola|Pharmacy)\s+/i;

function typedName(p: OsmPoi, country: string): string {
  let name = p.name!.trim();
  if (draw(p.id, 'kind') < 0.3) name = name.replace(kindWords, '');
  if (country === 'DE' && draw(p.id, 'umlaut') < 0.5) name = name.replace(/[äöüÄÖÜß]/g, (c) => UMLAUTS[c]!);
  if (draw(p.id, 'accents') < 0.3) name = stripAccents(name);
  if (draw(p.id, 'legal') < 0.6) name = `${name} ${pick(p.id, 'legal-form', legalSuffixes[country] ?? ['Ltd'])}`;
  const caseDraw = draw(p.id, 'case');
  if (caseDraw < 0.2) name = name.toUpperCase();
  else if (caseDraw < 0.3) name = name.toLowerCase();
  return name;
}

function typedPhone(p: OsmPoi, country: CountryCode): string | null {
  const raw = phoneOf(p)?.split(/[;,]/)[0];
  const parsed = raw ? parsePhoneNumberFromString(raw, country) : undefined;
  if (!parsed?.isValid()) return null;
  const style = draw(p.id, 'phone-style');
  if (style < 0.5) return parsed.formatNational();
  if (style < 0.75) return parsed.formatNational().replace(/\s/g, '');
  return parsed.formatInternational();
}

function typedStreet(p: OsmPoi): string {
  let street = p.tags['addr:street']!;
  for (const [pattern, written] of streetAbbreviations) {
    if (pattern.test(street) && draw(p.id, 'street-abbr') < 0.7) {
      street = street.replace(pattern, pick(p.id, 'street-abbr-form', written));
      break;
    }
  }
  return street;
}

/** A point a CRM would hold for the business: geocoded from its address, up to about 40 m off. */
function jittered(p: OsmPoi): { lat: number; lon: number } {
  const dist = 40 * draw(p.id, 'jitter-d');
  const angle = 2 * Math.PI * draw(p.id, 'jitter-a');
  const lat = p.lat + (dist * Math.cos(angle)) / 111_320;
  const lon = p.lon + (dist * Math.sin(angle)) / (111_320 * Math.cos((p.lat * Math.PI) / 180));
  return { lat: Math.round(lat * 1e6) / 1e6, lon: Math.round(lon * 1e6) / 1e6 };
}

type Combo = 'name+city' | 'name+phone' | 'name+address' | 'name+coordinates';

export interface LabelledRecord {
  ref: string;
  combo: Combo;
  extract: string;
  /** The OSM id of the place the record is; null for a business held out of the catalog. */
  expected: string | null;
  /** A held-out business: the OSM id left out of the catalog. */
  held_out: string | null;
  record: Record<string, string | number>;
}

function recordOf(p: OsmPoi, combos: Combo[]): LabelledRecord | null {
  const e = extracts[p.extract]!;
  const city = p.tags['addr:city'] ?? e.city;
  const phone = typedPhone(p, e.country);
  const available = combos.filter(
    (c) =>
      (c === 'name+city' && city !== null) ||
      (c === 'name+phone' && phone !== null) ||
      (c === 'name+address' && p.tags['addr:street'] !== undefined && p.tags['addr:housenumber'] !== undefined) ||
      c === 'name+coordinates',
  );
  if (available.length === 0) return null;
  const combo = pick(p.id, 'combo', available);
  const record: Record<string, string | number> = { name: typedName(p, e.country) };
  const writtenCity = city === e.city && e.cityWritten.length > 0 ? pick(p.id, 'city-written', e.cityWritten) : city;
  if (draw(p.id, 'country') < 0.5) record.country = e.country;
  if (combo === 'name+city') record.city = writtenCity!;
  else if (combo === 'name+phone') {
    record.phone = phone!;
    record.country = e.country;
  } else if (combo === 'name+address') {
    const street = typedStreet(p);
    const postcode = p.tags['addr:postcode'];
    if (draw(p.id, 'one-line') < 0.5) {
      record.address = `${street} ${p.tags['addr:housenumber']}${postcode ? `, ${postcode}` : ''}${writtenCity ? ` ${writtenCity}` : ''}`;
    } else {
      record.street = street;
      record.housenumber = p.tags['addr:housenumber']!;
      if (postcode) record.postcode = postcode;
      if (writtenCity && draw(p.id, 'address-city') < 0.7) record.city = writtenCity;
    }
  } else {
    Object.assign(record, jittered(p));
  }
  const website = websiteOf(p);
  if (website && draw(p.id, 'website') < 0.3) record.website = registrableDomain(website) ?? website;
  return { ref: `${p.extract}/${p.id}`, combo, extract: p.extract, expected: p.id, held_out: null, record };
}

const pois: OsmPoi[] = gunzipSync(readFileSync(source))
  .toString('utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as OsmPoi)
  .filter((p) => extracts[p.extract] !== undefined);

const businesses = pois.filter(isBusiness);
const streetKey = (p: OsmPoi): string => `${p.extract}\u0000${p.tags['addr:street'] ?? ''}`;
const perStreet = new Map<string, number>();
for (const p of businesses) if (p.tags['addr:street']) perStreet.set(streetKey(p), (perStreet.get(streetKey(p)) ?? 0) + 1);

/** Share of the businesses with a street that are held out of the catalog (a neighbour on the street stays). */
const heldOutShare = 0.1;
/** Share of the other businesses made into records. */
const positiveShare = 0.22;
const allCombos: Combo[] = ['name+city', 'name+phone', 'name+address', 'name+coordinates'];

/**
 * A business whose name another POI of the extract carries is never held out: it is most often the same
 * business mapped twice (a node and its building), which the catalog then does hold; a chain's other branch
 * would be one too, and no list with a name and a city alone can tell those apart.
 */
const fold = (s: string): string =>
  stripAccents(s)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
const namesPerExtract = new Map<string, number>();
for (const p of pois)
  if (p.name) namesPerExtract.set(`${p.extract}\u0000${fold(p.name)}`, (namesPerExtract.get(`${p.extract}\u0000${fold(p.name)}`) ?? 0) + 1);

const out: LabelledRecord[] = [];
for (const p of businesses) {
  const onStreetWithOthers =
    p.tags['addr:street'] !== undefined &&
    (perStreet.get(streetKey(p)) ?? 0) >= 2 &&
    namesPerExtract.get(`${p.extract}\u0000${fold(p.name!)}`) === 1;
  const bucket = draw(p.id, 'bucket');
  if (onStreetWithOthers && bucket < heldOutShare) {
    const r = recordOf(p, allCombos);
    if (r) out.push({ ...r, ref: `${p.extract}/held-out/${p.id}`, expected: null, held_out: p.id });
  } else if (bucket >= heldOutShare && bucket < heldOutShare + positiveShare) {
    const r = recordOf(p, allCombos);
    if (r) out.push(r);
  }
}
out.sort((a, b) => a.ref.localeCompare(b.ref));
writeFileSync(target, `${out.map((r) => JSON.stringify(r)).join('\n')}\n`);
const count = (f: (r: LabelledRecord) => boolean): number => out.filter(f).length;
console.log(
  `${out.length} records: ${count((r) => r.expected !== null)} of businesses in the catalog, ${count((r) => r.held_out !== null)} held out; ` +
    allCombos.map((c) => `${c} ${count((r) => r.combo === c)}`).join(', '),
);
