import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { loadGazetteer, loadLocator, NEAREST_MAX_KM } from './geo.ts';

const g = loadGazetteer();

// GeoNames ids of the cities the assertions name.
const VIENNA = 2761369;
const COLOGNE = 2886242;
const COLOGNE_IT = 3178287;
const PRAGUE = 3067696;
const PARIS = 2988507;
const PARIS_TX = 4717560;
const MUNICH = 2867714;
const GARCHING = 2922582;
const FRANKFURT = 2925533;
const GLASGOW = 2648579;

describe('city resolution by name', () => {
  test('resolves a city and its exonyms to the same single city', () => {
    for (const [names, id] of [
      [['Wien', 'Vienna', 'WIEN', 'Vienne'], VIENNA],
      [['Köln', 'Koeln', 'Cologne', 'Koln'], COLOGNE],
      [['Praha', 'Prague', 'Prag'], PRAGUE],
      [['München', 'Munich', 'Muenchen', 'Monaco di Baviera'], MUNICH],
    ] as const) {
      for (const name of names) assert.equal(g.resolveCity(name).chosen?.id, id, name);
    }
  });

  test('ranks same-named cities by population and lists the others as alternatives', () => {
    const paris = g.resolveCity('Paris');
    assert.equal(paris.chosen?.id, PARIS);
    assert.equal(paris.chosen?.countryCode, 'FR');
    assert.ok(paris.alternatives.some((c) => c.id === PARIS_TX));
    const populations = paris.alternatives.map((c) => c.population);
    assert.deepEqual(
      populations,
      [...populations].sort((a, b) => b - a),
    );
  });

  test('picks the most populous city of that name within the given country', () => {
    assert.equal(g.resolveCity('Paris', 'US').chosen?.id, PARIS_TX);
    assert.equal(g.resolveCity('Cologne', 'IT').chosen?.id, COLOGNE_IT);
    assert.equal(g.resolveCity('Cologne', 'Italia').chosen?.id, COLOGNE_IT);
    assert.equal(g.resolveCity('Cologne').chosen?.id, COLOGNE);
  });

  test('takes the city of the country a name also names, listing the exonym match as an alternative', () => {
    const monaco = g.resolveCity('Monaco');
    assert.equal(monaco.chosen?.countryCode, 'MC');
    assert.ok(
      monaco.alternatives.some((c) => c.id === MUNICH),
      'München (Monaco in Italian) is offered',
    );
    assert.equal(g.resolveCity('Monaco', 'DE').chosen?.id, MUNICH);
    assert.equal(g.resolveCity('Luxembourg').chosen?.countryCode, 'LU');
  });

  test('puts the country’s other same-named cities before other countries’ among the alternatives', () => {
    const alternatives = g.resolveCity('Paris', 'US').alternatives;
    const firstForeign = alternatives.findIndex((c) => c.countryCode !== 'US');
    assert.ok(firstForeign > 0, 'other US cities named Paris come first');
    assert.ok(alternatives.slice(firstForeign).every((c) => c.countryCode !== 'US'));
  });

  test('suggests close spellings when no city has the name', () => {
    const typo = g.resolveCity('Mnchen');
    assert.equal(typo.chosen, null);
    assert.equal(typo.candidates[0]?.city.id, MUNICH);
    const inCountry = g.resolveCity('Pqris', 'FR');
    assert.equal(inCountry.chosen, null);
    assert.ok(inCountry.candidates.length > 0 && inCountry.candidates.every((c) => c.city.countryCode === 'FR'));
    assert.ok(inCountry.candidates.some((c) => c.city.id === PARIS));
  });

  test('returns nothing, not an error, for a name that is empty after folding', () => {
    assert.deepEqual(g.resolveCity(' -- '), { chosen: null, alternatives: [], candidates: [] });
  });
});

describe('country resolution', () => {
  test('accepts ISO2 and ISO3 codes in any case and names in many languages', () => {
    for (const input of ['DE', 'de', 'DEU', 'Germany', 'Deutschland', 'Allemagne', 'Alemania', 'ドイツ', 'Германия']) {
      assert.equal(g.countryCode(input), 'DE', input);
    }
    assert.equal(g.countryCode('United States'), 'US');
    assert.equal(g.countryCode('UK'), 'GB');
    assert.equal(g.countryCode('China Mainland'), 'CN');
    assert.equal(g.countryCode('Atlantis'), undefined);
  });

  test('returns the country record for the API', () => {
    assert.deepEqual(g.resolveCountry('Österreich'), { code: 'AT', name: 'Austria', nativeName: 'Österreich', continent: 'EU' });
    assert.equal(g.resolveCountry('Narnia'), null);
  });

  test('reads every country name the Zomato file uses except a misspelling', () => {
    const zomato = readFileSync(fileURLToPath(new URL('../../../../shared/data/ratings/zomato-country-codes.csv', import.meta.url)), 'utf8')
      .trim()
      .split(/\r\n|\r|\n/)
      .slice(1)
      .map((line) => line.split(',').slice(1).join(',').trim());
    const unknown = zomato.filter((name) => g.countryCode(name) === undefined);
    assert.deepEqual(unknown, ['Phillipines']);
  });
});

describe('place locator', () => {
  const ratskeller = (() => {
    const line = gunzipSync(readFileSync(fileURLToPath(new URL('../../../../shared/data/osm/osm-pois-all.ndjson.gz', import.meta.url))))
      .toString('utf8')
      .split('\n')
      .find((l) => l.includes('"n60013073"'));
    assert.ok(line, 'the Ratskeller (Marienplatz, Munich) is in the OSM file');
    return JSON.parse(line) as { lat: number; lon: number; tags: Record<string, string> };
  })();

  test('is the same process-wide instance as the gazetteer', () => {
    assert.equal(loadLocator(), g);
  });

  test('matches the address city and keeps it as written', () => {
    const a = g.assignCity({ city: ratskeller.tags['addr:city'], countryCode: 'DE', lat: ratskeller.lat, lon: ratskeller.lon });
    assert.deepEqual(a, { city: 'München', cityId: MUNICH, source: 'address', distanceM: null, countryCode: 'DE' });
  });

  test('matches an address city written with its postcode or region', () => {
    assert.equal(g.assignCity({ city: '80331 München', countryCode: 'DE' }).cityId, MUNICH);
    assert.equal(g.assignCity({ city: 'Munich, Bavaria' }).cityId, MUNICH);
  });

  test('matches a written city that contains the name of a city at the point (Michelin: Frankfurt on the Main, Glasgow City)', () => {
    const michelin = parse(
      gunzipSync(readFileSync(fileURLToPath(new URL('../../../../shared/data/places/michelin-guide-2022-6510.csv.gz', import.meta.url)))),
      {
        columns: true,
      },
    ) as Array<Record<string, string>>;
    for (const [location, id] of [
      ['Frankfurt on the Main', FRANKFURT],
      ['Glasgow City', GLASGOW],
    ] as const) {
      const row = michelin.find((r) => r.Location === location);
      assert.ok(row, `the Michelin file has a restaurant in ${location}`);
      const country = g.countryCode(row.Address!.split(',').pop()!.trim()) ?? null;
      const a = g.assignCity({ city: row.Location, countryCode: country, lat: Number(row.Latitude), lon: Number(row.Longitude) });
      assert.deepEqual([a.source, a.cityId, a.city], ['address', id, location]);
    }
    assert.equal(
      g.assignCity({ city: 'Frankfurt on the Main', countryCode: 'DE' }).source,
      'address_unmatched',
      'without a point there is nothing to compare with',
    );
  });

  test('takes the nearest of same-named cities when the point is known and infers the country', () => {
    const inTexas = g.assignCity({ city: 'Paris', lat: 33.66, lon: -95.55 });
    assert.equal(inTexas.cityId, PARIS_TX);
    assert.equal(inTexas.countryCode, 'US');
  });

  test('keeps an address city it cannot match as address_unmatched, filed under the city of its point', () => {
    const a = g.assignCity({ city: 'Xyzzyville', countryCode: 'DE', lat: 48.1374, lon: 11.5755 });
    assert.deepEqual(
      { ...a, distanceM: null },
      { city: 'Xyzzyville', cityId: MUNICH, source: 'address_unmatched', distanceM: null, countryCode: 'DE' },
    );
    assert.ok(a.distanceM !== null && a.distanceM < 1000, `distance ${a.distanceM}`);
    assert.equal(g.assignCity({ city: 'Xyzzyville', lat: 48.1374, lon: 11.5755 }).countryCode, 'DE', 'the country inferred from that city');
    assert.deepEqual(g.assignCity({ city: 'Xyzzyville', countryCode: 'DE' }), {
      city: 'Xyzzyville',
      cityId: null,
      source: 'address_unmatched',
      distanceM: null,
      countryCode: 'DE',
    });
    assert.equal(g.assignCity({ city: 'Paris', countryCode: 'DE' }).source, 'address_unmatched');
  });

  test('gives a point in central Munich without an address city München as the nearest place', () => {
    const a = g.assignCity({ lat: ratskeller.lat, lon: ratskeller.lon });
    assert.equal(a.cityId, MUNICH);
    assert.equal(a.city, 'Munich');
    assert.equal(a.source, 'nearest');
    assert.equal(a.countryCode, 'DE');
    assert.ok(a.distanceM !== null && a.distanceM < 1000, `distance ${a.distanceM}`);
  });

  test('gives a point in an outer district the city rather than a closer district point', () => {
    // Pasing, 8.5 km from the centre of Munich, has its own GeoNames point as a city section.
    assert.equal(g.assignCity({ lat: 48.1497, lon: 11.4617 }).cityId, MUNICH);
    // Garching is its own town next to Munich.
    assert.equal(g.assignCity({ lat: 48.249, lon: 11.651 }).cityId, GARCHING);
  });

  test('takes the country whose borders hold the point, and the given one only within the border tolerance', () => {
    const strasbourg = { lat: 48.5734, lon: 7.7521 };
    assert.equal(g.assignCity(strasbourg).countryCode, 'FR');
    // 3 km inside France: a source that says Germany is wrong about the country (or the point).
    const saidGerman = g.assignCity({ ...strasbourg, countryCode: 'DE' });
    assert.deepEqual([saidGerman.countryCode, g.city(saidGerman.cityId!)?.name], ['FR', 'Strasbourg']);
    // On the Rhine, within BORDER_TOLERANCE_M of Germany: the source is believed, and the city sought there.
    const onTheRhine = g.assignCity({ lat: 48.5737, lon: 7.8, countryCode: 'DE' });
    assert.deepEqual([onTheRhine.countryCode, g.city(onTheRhine.cityId!)?.countryCode], ['DE', 'DE']);
    assert.equal(g.assignCity({ lat: 48.5737, lon: 7.8 }).countryCode, 'FR');
  });

  test('believes the source over a point well inside another country only when the address city says so', () => {
    // Real rows: Michelin files Torkel, Vaduz, under Switzerland; Vaduz is no Swiss city.
    const torkel = g.assignCity({ city: 'Vaduz', countryCode: 'CH', lat: 47.1441186, lon: 9.5196627 });
    assert.deepEqual([torkel.countryCode, g.city(torkel.cityId!)?.name, torkel.source], ['LI', 'Vaduz', 'address']);
    // Zomato's InnerChef, Noida, India, at 28°N 0°E (Algeria): the point is wrong, not the country.
    const innerChef = g.assignCity({ city: 'Noida', countryCode: 'IN', lat: 28, lon: 0 });
    assert.deepEqual([innerChef.countryCode, g.city(innerChef.cityId!)?.name], ['IN', 'Noida']);
    assert.equal(g.assignCity({ city: 'Xyzzyville', countryCode: 'IN', lat: 28, lon: 0 }).countryCode, 'DZ');
  });

  test('takes territories as GeoNames files them, and the city of that territory', () => {
    // Pointe-à-Pitre, Guadeloupe: GP, also when the source says France.
    for (const countryCode of [null, 'FR']) {
      const a = g.assignCity({ lat: 16.2411, lon: -61.5331, countryCode });
      assert.deepEqual([a.countryCode, g.city(a.cityId!)?.countryCode], ['GP', 'GP']);
    }
    // Ceuta: country-coder's code EA is no country of GeoNames, which files the town under Spain.
    assert.equal(g.assignCity({ lat: 35.889, lon: -5.3198 }).countryCode, 'ES');
  });

  test(`gives no city to a point in the ocean, more than ${NEAREST_MAX_KM} km from any place`, () => {
    assert.deepEqual(g.assignCity({ lat: 30, lon: -40 }), { city: null, cityId: null, source: null, distanceM: null, countryCode: null });
    assert.equal(g.nearestCity(30, -40), null);
  });

  test('gives no city when there is neither an address city nor a point', () => {
    assert.deepEqual(g.assignCity({ countryCode: 'AT' }), { city: null, cityId: null, source: null, distanceM: null, countryCode: 'AT' });
  });
});
