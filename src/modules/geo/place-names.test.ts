import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { copyTestSqlite, type TestSqlite } from '../../../test/helpers/databases.ts';
import { loadCountryRows } from './geo.data.ts';
import { loadGazetteer } from './geo.ts';
import { SqlPlaceNames } from './place-names.ts';

// GeoNames ids of the cities the assertions name.
const MUNICH = 2867714;
const PARIS = 2988507;
const PARIS_TX = 4717560;

describe('city and country names answered from the reference tables', () => {
  let t: TestSqlite;
  const g = loadGazetteer();
  let names: SqlPlaceNames;
  let sample: Array<{ name: string; country_code: string }>;

  before(async () => {
    t = await copyTestSqlite('prepared');
    names = new SqlPlaceNames(t.db.sqlite!);
    // Every 400th city (about 340 of them), spread over countries, sizes and scripts.
    sample = t.db.sqlite!.prepare('SELECT name, country_code FROM cities WHERE id % 400 = 7 ORDER BY id').all() as typeof sample;
  });
  after(() => t.dispose());

  const cases: Array<[string, string?]> = [
    ['Wien'],
    ['Vienna'],
    ['WIEN'],
    ['Vienne'],
    ['Köln'],
    ['Koeln'],
    ['Cologne'],
    ['Koln'],
    ['Praha'],
    ['Prague'],
    ['Prag'],
    ['München'],
    ['Munich'],
    ['Muenchen'],
    ['Monaco di Baviera'],
    ['Paris'],
    ['Paris', 'US'],
    ['Cologne', 'IT'],
    ['Cologne', 'Italia'],
    ['Monaco'],
    ['Monaco', 'DE'],
    ['Luxembourg'],
    ['Singapore'],
    ['San Jose'],
    ['Springfield'],
    ['Springfield', 'United States'],
    ['Mnchen'],
    ['Pqris', 'FR'],
    ['Berlni'],
    ['Franfkurt am Main'],
    ['Xyzzyq'],
    [' -- '],
    [''],
    ['Paris', 'XX'],
    ['東京'],
    ['Москва'],
  ];

  test('gives the gazetteer’s answer, alternatives and candidates included, for names with and without a country', () => {
    for (const [name, country] of cases)
      assert.deepEqual(names.resolveCity(name, country), g.resolveCity(name, country), `${name} ${country ?? ''}`);
  });

  test('gives the gazetteer’s answer for a sample of real city names, in their country, alone and misspelt', () => {
    assert.ok(sample.length > 200, `${sample.length} sampled cities`);
    for (const { name, country_code } of sample) {
      assert.deepEqual(names.resolveCity(name), g.resolveCity(name), name);
      assert.deepEqual(names.resolveCity(name, country_code), g.resolveCity(name, country_code), `${name} ${country_code}`);
    }
    for (const { name, country_code } of sample.slice(0, 60)) {
      const typo = `${name.slice(0, 2)}${name.slice(3)}x`;
      assert.deepEqual(names.resolveCity(typo, country_code), g.resolveCity(typo, country_code), `${typo} ${country_code}`);
    }
  });

  test('picks, ranks and suggests as the gazetteer tests describe', () => {
    assert.equal(names.resolveCity('Munich').chosen?.id, MUNICH);
    assert.equal(names.resolveCity('Paris').chosen?.id, PARIS);
    assert.equal(names.resolveCity('Paris', 'US').chosen?.id, PARIS_TX);
    assert.ok(
      names.resolveCity('Monaco').alternatives.some((c) => c.id === MUNICH),
      'München (Monaco in Italian) is offered',
    );
    assert.equal(names.resolveCity('Mnchen').candidates[0]?.city.id, MUNICH);
  });

  test('resolves every country code and name the gazetteer knows to the same country', () => {
    const inputs = loadCountryRows().flatMap((c) => [c.code, c.code.toLowerCase(), c.alpha3 ?? '', c.name, ...c.names, ...c.otherNames]);
    assert.ok(inputs.length > 5000);
    for (const input of [...inputs, 'Atlantis', 'Narnia', 'UK', 'China Mainland', 'Österreich', 'congo', 'bi', 'my']) {
      assert.deepEqual(names.resolveCountry(input), g.resolveCountry(input), input);
    }
  });
});
