import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { writePlaces } from '../../../test/helpers/places.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../places/place-record.ts';
import { noCriteria, type PlaceCriteria, type PlaceSort } from './query/criteria.ts';
import { createSearchReads } from './search.reads.ts';

/** The read tasks as a read-pool thread runs them (its count cache included). */
const { searchPage } = createSearchReads();

/** Names that defeat plain substring search: letters outside decomposition, short words, CJK, whole names. */
const names = [
  'NØR Restaurant',
  'Straße Café',
  'Łódź Bar',
  'Dıyarbakır Kebap',
  'GR',
  'GR 11 Trail',
  'Grand Hotel',
  'Öl & Wein',
  'Ó Maria',
  'Brot R Us',
  'ローソン新宿店',
  '牛角',
  '新宿牛角',
  'バー新宿',
  'ハーブ新宿',
  'The Boulder Bar',
  'Boulder Beer',
  'Boulder',
  'Ratskeller',
];

function record(i: number, name: string): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('match', `m${i}`),
    source: 'match',
    source_id: `m${i}`,
    name,
    names: null,
    category: 'restaurant',
    categories: ['restaurant'],
    source_categories: null,
    phone: null,
    phone_e164: null,
    website: null,
    website_domain: null,
    email: null,
    street: null,
    housenumber: null,
    postcode: null,
    address: null,
    region: null,
    city: 'München',
    city_id: 2867714,
    city_source: 'address',
    city_distance_m: null,
    country_code: 'DE',
    lat: 48.13,
    lon: 11.57,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
  };
  return { ...base, content_hash: contentHash(base) };
}

const criteria = (words: string[], over: Partial<PlaceCriteria> = {}): PlaceCriteria => ({
  ...noCriteria,
  text: { words, mode: 'substring' },
  ...over,
});

for (const dialect of dialects) {
  describe(`name matching on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
      await writePlaces(
        t.db,
        names.map((n, i) => record(i, n)),
      );
    });
    after(async () => t.dispose());

    /** The names a search finds, in order, alone and within a city (another plan on SQLite: not the text index alone). */
    async function found(words: string[], sort: PlaceSort = 'relevance'): Promise<string[]> {
      const alone = await searchPage(t.db, criteria(words), sort, null, 50);
      const inCity = await searchPage(t.db, criteria(words, { cityId: 2867714 }), sort, null, 50);
      assert.deepEqual(
        inCity.rows.map((r) => r.name),
        alone.rows.map((r) => r.name),
        `${words.join(' ')}: the same with a city`,
      );
      assert.equal(alone.total, alone.rows.length);
      return alone.rows.map((r) => r.name);
    }
    const sorted = async (words: string[]) => (await found(words)).sort();

    test('finds names with letters outside Unicode decomposition by their plain spelling, and by their own', async () => {
      assert.deepEqual(await sorted(['nor']), ['NØR Restaurant']);
      assert.deepEqual(await sorted(['NØR']), ['NØR Restaurant']);
      assert.deepEqual(await sorted(['strasse']), ['Straße Café']);
      assert.deepEqual(await sorted(['lodz']), ['Łódź Bar']);
      assert.deepEqual(await sorted(['ŁÓDŹ']), ['Łódź Bar']);
      assert.deepEqual(await sorted(['diyarbakir']), ['Dıyarbakır Kebap']);
    });

    test('matches words of one or two letters at the start of a word of the name, folded', async () => {
      assert.deepEqual(await sorted(['GR']), ['GR', 'GR 11 Trail', 'Grand Hotel']);
      assert.deepEqual(await sorted(['öl']), ['Öl & Wein']);
      assert.deepEqual(await sorted(['ÖL']), ['Öl & Wein']);
      assert.deepEqual(await sorted(['o']), ['Ó Maria']);
      assert.deepEqual(await sorted(['r', 'us']), ['Brot R Us']);
      assert.deepEqual(await sorted(['11']), ['GR 11 Trail']);
    });

    test('finds one or two CJK letters inside a longer name, and keeps kana voicing apart', async () => {
      assert.deepEqual(await sorted(['牛角']), ['新宿牛角', '牛角']);
      assert.deepEqual(await sorted(['宿']), ['ハーブ新宿', 'バー新宿', 'ローソン新宿店', '新宿牛角']);
      assert.deepEqual(await sorted(['バー']), ['バー新宿']);
      assert.deepEqual(await sorted(['ローソン']), ['ローソン新宿店']);
    });

    test('ranks a whole name first, then names starting with the first word, then the others', async () => {
      assert.deepEqual(await found(['Boulder']), ['Boulder', 'Boulder Beer', 'The Boulder Bar']);
      assert.deepEqual(await found(['GR']), ['GR', 'GR 11 Trail', 'Grand Hotel']);
      assert.deepEqual((await found(['boulder', 'beer']))[0], 'Boulder Beer');
    });

    test('tolerates two neighbouring letters swapped as one typo, and ranks the closest whole name first', async () => {
      const typo = (words: string[]) =>
        searchPage(t.db, { ...criteria(words, { cityId: 2867714 }), text: { words, mode: 'fuzzy' } }, 'relevance', null, 10);
      assert.deepEqual(
        (await typo(['Ratskelelr'])).rows.map((r) => r.name),
        ['Ratskeller'],
      );
      assert.deepEqual(
        (await typo(['Bouldre'])).rows.map((r) => r.name),
        ['Boulder', 'Boulder Beer', 'The Boulder Bar'],
      );
    });
  });
}
