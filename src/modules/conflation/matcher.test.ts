import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { before, describe, test } from 'node:test';
import { readSampleSource } from '../../../test/helpers/conflation-sample.ts';
import type { PlaceRecord } from '../places/place-record.ts';
import { addressForm, compareAddresses } from './address.ts';
import { blockingKeys, cellOf, cellsAround, probeKeys } from './blocking.ts';
import { categoryFacts } from './kinds.ts';
import { type MatchDecision, type MatchRecord, matchPlaces } from './matcher.ts';
import { compareNames, nameForms } from './names.ts';
import { matchRules } from './rules.ts';

/** A record as enrichment leaves it, with only what a test sets. */
function place(fields: Partial<MatchRecord> & Pick<MatchRecord, 'source' | 'name' | 'lat' | 'lon'>): MatchRecord {
  return {
    names: null,
    category: fields.categories ? (fields.categories[0] ?? null) : 'restaurant',
    categories: ['restaurant'],
    phone_e164: null,
    website_domain: null,
    street: null,
    housenumber: null,
    address: null,
    ...fields,
  };
}

/** A point `metres` north of (lat, lon). */
const north = (lat: number, metres: number): number => lat + metres / 111_195;

describe('conflation matcher: rules', () => {
  const lat = 48.137;
  const lon = 11.575;

  test('records of the same source never match, whatever agrees', () => {
    const a = place({ source: 'osm', name: 'Mural', lat, lon, phone_e164: '+498923023186', street: 'Hotterstraße', housenumber: '12' });
    const d = matchPlaces(a, { ...a });
    assert.equal(d.match, false);
    assert.equal(d.rule, 'same_source');
  });

  test('the same name near enough for the kind of place matches; further away it does not', () => {
    const a = place({ source: 'michelin', name: 'Restaurant Torkel', lat, lon });
    assert.equal(matchPlaces(a, place({ source: 'osm', name: 'Torkel', lat: north(lat, 80), lon })).rule, 'name');
    const far = matchPlaces(a, place({ source: 'osm', name: 'Torkel', lat: north(lat, 600), lon }));
    assert.equal(far.match, false);
    assert.equal(far.rule, 'too_far');
  });

  test('the distance allowed depends on the kind of place: a park, a hotel and a café', () => {
    const at = (categories: string[], metres: number, other = categories) =>
      matchPlaces(
        place({ source: 'osm', name: 'Englischer Garten', lat, lon, categories }),
        place({ source: 'overture', name: 'Englischer Garten', lat: north(lat, metres), lon, categories: other }),
      ).match;
    assert.equal(categoryFacts('park')?.size, 'large');
    assert.equal(categoryFacts('hotel')?.size, 'medium');
    assert.equal(categoryFacts('cafe')?.size, 'small');
    assert.equal(categoryFacts('restaurant_italian')?.tag, 'amenity=restaurant', 'a sub-category has its parent preset’s tag');
    assert.equal(at(['park'], 1200), true, 'two points of one park 1.2 km apart');
    assert.equal(at(['hospital'], 1200), true);
    assert.equal(at(['hotel'], 350), true);
    assert.equal(at(['hotel'], 700), false);
    assert.equal(at(['cafe'], 350), false);
    assert.equal(at(['cafe'], 120), true);
    assert.equal(at(['park'], 1200, []), true, 'a record without a category takes the other’s size');
  });

  test('two branches of a chain: same name, domain and phone line, but another house number on the street', () => {
    const branch = (housenumber: string, metres: number, source: string) =>
      place({
        source,
        name: 'Zak The Baker',
        lat: north(lat, metres),
        lon,
        phone_e164: '+17862940876',
        website_domain: 'zakthebaker.com',
        street: 'NW 26th St',
        housenumber,
      });
    const other = matchPlaces(branch('295', 0, 'michelin'), branch('405', 100, 'yelp'));
    assert.equal(other.match, false);
    assert.equal(other.rule, 'address_conflict');
    assert.equal(matchPlaces(branch('295', 0, 'michelin'), branch('295', 20, 'yelp')).rule, 'phone');
  });

  test('two branches of a chain without addresses: same name and brand domain, far apart, do not match', () => {
    const a = place({ source: 'zomato', name: 'Hakkasan', lat, lon, website_domain: 'hakkasan.com' });
    const b = place({ source: 'michelin', name: 'Hakkasan Hanway Place', lat: north(lat, 1190), lon, website_domain: 'hakkasan.com' });
    assert.equal(matchPlaces(a, b).match, false);
  });

  test('a domain or a phone many places share is no evidence (context from the catalog)', () => {
    const a = place({ source: 'michelin', name: 'Le Grill', lat, lon, website_domain: 'montecarlosbm.com' });
    const b = place({ source: 'osm', name: 'Grill du Casino', lat: north(lat, 200), lon, website_domain: 'montecarlosbm.com' });
    assert.equal(matchPlaces(a, b).rule, 'domain');
    const d = matchPlaces(a, b, { placesWithDomain: () => 12 });
    assert.equal(d.match, false);
    assert.ok(d.reasons.includes('same website domain, shared by many places'));
    const phoneA = { ...a, website_domain: null, phone_e164: '+37798063000' };
    const phoneB = { ...b, website_domain: null, phone_e164: '+37798063000' };
    assert.equal(matchPlaces(phoneA, phoneB).rule, 'phone');
    assert.equal(matchPlaces(phoneA, phoneB, { placesWithPhone: () => 30 }).match, false);
  });

  test('a shared phone or domain does not make two businesses of different names one', () => {
    const a = place({ source: 'michelin', name: 'Topolobampo', lat, lon, phone_e164: '+13126611434' });
    const b = place({ source: 'yelp', name: 'Xoco', lat: north(lat, 30), lon, phone_e164: '+13126611434' });
    const d = matchPlaces(a, b);
    assert.equal(d.match, false);
    assert.equal(d.rule, 'names_differ');
  });

  test('a hotel and the restaurant inside it are two places, even under one name', () => {
    const a = place({ source: 'michelin', name: 'Palace', lat, lon, categories: ['restaurant'] });
    const b = place({ source: 'osm', name: 'Palace Hotel', lat: north(lat, 17), lon, categories: ['hotel'] });
    assert.equal(matchPlaces(a, b).rule, 'category_conflict');
    assert.equal(matchPlaces(a, { ...b, categories: ['restaurant', 'hotel'] }).match, true, 'a record that is both is compatible');
  });

  test('a name within the other needs more than nearness: the address, a phone or a domain', () => {
    const michelin = place({
      source: 'michelin',
      name: "La Table d'Antonio Salvatore au Rampoldi",
      lat,
      lon,
      address: '3 avenue des Spélugues, Monaco, 98000, France',
    });
    const osm = place({ source: 'osm', name: 'Rampoldi', lat: north(lat, 7), lon, street: 'Avenue des Spélugues', housenumber: '3' });
    assert.equal(matchPlaces(michelin, osm).rule, 'name_and_address');
    assert.equal(matchPlaces(michelin, { ...osm, street: null, housenumber: null }).rule, 'not_enough');
    assert.equal(matchPlaces(michelin, { ...osm, street: null, housenumber: null, categories: ['cafe'] }).match, false);
  });

  test('phone, name and address agreeing outweigh a point kilometres off', () => {
    const a = place({
      source: 'michelin',
      name: 'Saison',
      lat,
      lon,
      phone_e164: '+14158287990',
      address: '178 Townsend St., San Francisco, 94107, United States',
    });
    const b = place({ source: 'yelp', name: 'Saison', lat: north(lat, 2700), lon, phone_e164: '+14158287990', street: '178 Townsend St' });
    assert.equal(matchPlaces(a, b).rule, 'phone_name_and_address');
    assert.equal(matchPlaces(a, { ...b, street: null }).match, false);
  });

  test('records without a position are not matched', () => {
    const a = place({ source: 'michelin', name: 'Demo', lat: null, lon: null });
    assert.equal(matchPlaces(a, place({ source: 'osm', name: 'Demo', lat, lon })).rule, 'no_position');
  });
});

describe('conflation matcher: names and addresses', () => {
  const similarity = (a: string, b: string, namesB: string | null = null) => compareNames(nameForms(a, null), nameForms(b, namesB));

  test('business words, articles and accents do not tell names apart', () => {
    assert.equal(similarity('Ravintola Olo', 'Olo').similarity, 1);
    assert.equal(similarity('The Kitchin', 'Kitchin').similarity, 1);
    assert.equal(similarity("Celler d'en Toni", 'Celler d’en Toni').similarity, 1);
    assert.equal(similarity('Tinta y Café', 'Tinta y Cafe').similarity, 1);
    assert.equal(similarity('Restaurant Gordon Ramsay GmbH', 'Gordon Ramsay Ltd').similarity, 1);
  });

  test('a name within a longer one is contained, not the same', () => {
    const c = similarity('Wako', 'Wako Japanese Restaurant');
    assert.equal(c.contained, true);
    assert.ok(c.similarity < matchRules.sameNameMin);
    assert.equal(similarity('Club Gascon', 'Cellar Gascon').contained, false);
  });

  test('other names count, former names do not', () => {
    assert.equal(similarity('Club Gascon', 'Cellar Gascon', '{"alt":["Club Gascon"]}').similarity, 1);
    assert.equal(similarity('Le Vistamar', 'Pavyllon', '{"old":["Le Vistamar"]}').similarity < 0.5, true);
  });

  test('street addresses are read from separate fields, a street line or a one-line address', () => {
    const osm = addressForm({ street: 'Dienerstraße', housenumber: '14-15', address: null });
    const michelin = addressForm({ street: null, housenumber: null, address: 'Dienerstraße 14, Munich, 80331, Germany' });
    assert.equal(compareAddresses(osm, michelin), 'agree');
    const mall = addressForm({
      street: null,
      housenumber: null,
      address: 'The Shoppes at Marina Bay Sands, Galleria Level, #B1-71, 2 Bayfront Avenue, 018972, Singapore',
    });
    assert.deepEqual(mall, { street: ['bayfront'], numbers: [2], compound: null });
    const yelp = addressForm({ street: '3127 Fillmore St', housenumber: null, address: null });
    const next = addressForm({ street: null, housenumber: null, address: '3131 Fillmore St., San Francisco, 94123, United States' });
    assert.equal(compareAddresses(yelp, next), 'conflict');
    const corner = addressForm({ street: '445 N Clark St', housenumber: null, address: null });
    const other = addressForm({ street: '74 W Illinois St', housenumber: null, address: null });
    assert.equal(compareAddresses(corner, other), 'unknown', 'other streets: a corner building has two addresses');
  });
});

describe('conflation blocking', () => {
  test('a point’s neighbourhood holds every cell within one cell side', () => {
    for (const [lat, lon] of [
      [60.17, 24.94],
      [48.14, 11.58],
      [-33.9, 151.2],
      [0.001, -0.001],
    ] as const) {
      const around = cellsAround(lat, lon);
      assert.equal(new Set(around).size, 9);
      for (const [dLat, dLon] of [
        [1, 0],
        [-1, 0],
        [0, 1],
        [0, -1],
        [0.7, 0.7],
        [-0.7, 0.7],
      ] as const) {
        const metres = matchRules.blockingCellM * 0.99;
        const other = cellOf(lat + (dLat * metres) / 111_320, lon + (dLon * metres) / (111_320 * Math.cos((lat * Math.PI) / 180)));
        assert.ok(around.includes(other), `${lat},${lon} + (${dLat},${dLon})`);
      }
    }
  });

  test('records the matcher accepts share a key; far records with nothing in common do not', () => {
    const a = place({ source: 'michelin', name: 'Restaurant Torkel', lat: 47.14, lon: 9.52 });
    const b = place({ source: 'osm', name: 'Torkel', lat: 47.1401, lon: 9.5201 });
    const shared = (x: MatchRecord, y: MatchRecord) => probeKeys(x).some((k) => blockingKeys(y).includes(k));
    assert.equal(shared(a, b), true);
    assert.equal(shared(a, { ...b, lat: 47.3 }), false);
    assert.equal(shared(a, { ...b, name: 'Gasthof Löwen' }), false);
    assert.equal(shared({ ...a, phone_e164: '+4232324410' }, { ...b, lat: 47.3, name: 'X', phone_e164: '+4232324410' }), true);
  });
});

/** A judged pair of test/fixtures/conflation/judged-pairs.csv. */
interface JudgedPair {
  aSource: string;
  aId: string;
  bSource: string;
  bId: string;
  same: boolean;
  kind: string;
  split: 'tuning' | 'heldout' | 'posttuning';
  reason: string;
}

const fixture = resolve(import.meta.dirname, '../../../test/fixtures/conflation/judged-pairs.csv');

function readJudgedPairs(): JudgedPair[] {
  const lines = readFileSync(fixture, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'));
  assert.equal(lines[0], 'a_source,a_id,b_source,b_id,label,kind,split,reason');
  return lines.slice(1).map((line) => {
    const f = line.split(',');
    assert.equal(f.length, 8, `eight fields: ${line}`);
    assert.ok(f[4] === '0' || f[4] === '1', line);
    assert.ok(f[6] === 'tuning' || f[6] === 'heldout' || f[6] === 'posttuning', line);
    return {
      aSource: f[0]!,
      aId: f[1]!,
      bSource: f[2]!,
      bId: f[3]!,
      same: f[4] === '1',
      kind: f[5]!,
      split: f[6] as JudgedPair['split'],
      reason: f[7]!,
    };
  });
}

interface Outcome {
  pair: JudgedPair;
  a: PlaceRecord;
  b: PlaceRecord;
  decision: MatchDecision;
}

function figures(outcomes: readonly Outcome[]) {
  const tp = outcomes.filter((o) => o.decision.match && o.pair.same).length;
  const fp = outcomes.filter((o) => o.decision.match && !o.pair.same).length;
  const fn = outcomes.filter((o) => !o.decision.match && o.pair.same).length;
  return { pairs: outcomes.length, matches: tp + fn, tp, fp, fn, precision: tp / (tp + fp), recall: tp / (tp + fn) };
}

const percent = (v: number) => `${(100 * v).toFixed(1)}%`;

describe('conflation matcher on the judged sample of real overlaps (../shared/data)', () => {
  const pairs = readJudgedPairs();
  const outcomes: Outcome[] = [];

  before(async () => {
    const wanted = new Map<string, Set<string>>();
    for (const p of pairs) {
      for (const [source, id] of [
        [p.aSource, p.aId],
        [p.bSource, p.bId],
      ] as const) {
        if (!wanted.has(source)) wanted.set(source, new Set());
        wanted.get(source)!.add(id);
      }
    }
    const records = new Map<string, Map<string, PlaceRecord>>();
    for (const [source, ids] of wanted) records.set(source, await readSampleSource(source, ids));
    for (const pair of pairs) {
      const a = records.get(pair.aSource)?.get(pair.aId);
      const b = records.get(pair.bSource)?.get(pair.bId);
      assert.ok(a && b, `both records of ${pair.aId} / ${pair.bId} are read and enriched`);
      outcomes.push({ pair, a, b, decision: matchPlaces(a, b) });
    }
  });

  test('the sample is what its README says: 252 pairs, ≥ 50 matches, ≥ 50 non-matches of which ≥ 20 tricky', () => {
    assert.equal(pairs.length, 252);
    assert.ok(pairs.filter((p) => p.same).length >= 50);
    assert.ok(pairs.filter((p) => !p.same).length >= 50);
    assert.ok(pairs.filter((p) => !p.same && p.kind === 'tricky').length >= 20);
    assert.ok(pairs.filter((p) => p.split === 'heldout').length >= 30);
    assert.ok(pairs.filter((p) => p.split === 'posttuning').length >= 30);
  });

  test('precision ≥ 98% and recall ≥ 90%; figures printed for the whole sample and each part (tuning, held out, judged after tuning)', (t) => {
    const lines: string[] = [];
    for (const [label, part] of [
      ['all', outcomes],
      ['tuning', outcomes.filter((o) => o.pair.split === 'tuning')],
      ['held-out', outcomes.filter((o) => o.pair.split === 'heldout')],
      ['after tuning', outcomes.filter((o) => o.pair.split === 'posttuning')],
    ] as const) {
      const f = figures(part);
      lines.push(
        `${label.padEnd(12)} pairs ${f.pairs}, matches ${f.matches}: precision ${percent(f.precision)} (${f.fp} false), recall ${percent(f.recall)} (${f.fn} missed)`,
      );
    }
    const tricky = outcomes.filter((o) => !o.pair.same && o.pair.kind === 'tricky');
    lines.push(`tricky non-matches: ${tricky.filter((o) => !o.decision.match).length} of ${tricky.length} kept apart`);
    for (const o of outcomes.filter((x) => x.decision.match !== x.pair.same)) {
      lines.push(
        `${o.pair.same ? 'missed' : 'false match'} [${o.pair.split}] ${o.a.source} "${o.a.name}" / ${o.b.source} "${o.b.name}": ` +
          `${o.decision.rule}; ${o.decision.reasons.join('; ')} — judged: ${o.pair.reason}`,
      );
    }
    const report = lines.join('\n');
    t.diagnostic(`conflation sample\n${report}`);
    const all = figures(outcomes);
    assert.ok(all.precision >= 0.98, `precision ${percent(all.precision)}`);
    assert.ok(all.recall >= 0.9, `recall ${percent(all.recall)}`);
  });

  test('blocking loses no pair the matcher accepts', () => {
    for (const o of outcomes.filter((x) => x.decision.match)) {
      const keys = new Set(blockingKeys(o.b));
      assert.ok(
        probeKeys(o.a).some((k) => keys.has(k)),
        `${o.a.name} / ${o.b.name}`,
      );
    }
  });
});
