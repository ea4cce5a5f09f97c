import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { writePlaces } from '../../../test/helpers/places.ts';
import { type FoundContacts, normaliseSourceContacts, siteOf } from '../contacts/contacts.ts';
import { normalisePhone } from '../geo/phone.ts';
import { osmObjectToPlace } from '../importers/readers/osm-tags.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../places/place-record.ts';
import { findPlaceRow } from '../places/place-rows.repository.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import * as repo from './enrichment.repository.ts';
import { foundColumnsOf } from './enrichment.service.ts';

describe('sites and source contacts', () => {
  test('a website is its site whatever its scheme, www, case or trailing slash; a path stays part of it', () => {
    assert.deepEqual(siteOf('https://www.Hotel-Example.mc/', null), { key: 'hotel-example.mc', url: 'https://www.hotel-example.mc/' });
    assert.equal(siteOf('hotel-example.mc', null)?.key, 'hotel-example.mc');
    assert.equal(
      siteOf('http://www.montecarlosbm.com/en/restaurant/louis-xv/#menu', null)?.key,
      'montecarlosbm.com/en/restaurant/louis-xv',
    );
  });

  test("without a website the email's domain is the site, unless a mail provider's; no http address is no site", () => {
    assert.deepEqual(siteOf(null, 'Resa@Columbus.MC'), { key: 'columbus.mc', url: 'https://columbus.mc/' });
    assert.equal(siteOf(null, 'someone@gmail.com'), null);
    assert.equal(siteOf(null, 'someone@orange.fr'), null);
    assert.equal(siteOf('ftp://files.example.com', null), null);
    assert.equal(siteOf('http://192.168.1.10/', null), null);
    assert.equal(siteOf(null, 'not an email'), null);
  });

  test('OSM contact tags become full lists: every value, handles spelled network:handle, normalised on import', () => {
    const read = osmObjectToPlace(
      'n1',
      {
        name: 'Café Test',
        amenity: 'cafe',
        phone: '+377 93 15 48 52;+377 93 15 48 53',
        email: 'Info@Cafe-Test.MC',
        'contact:instagram': 'cafe_test',
        'contact:facebook': 'https://www.facebook.com/cafetest',
      },
      43.73,
      7.42,
    );
    assert.ok(read.ok);
    assert.deepEqual(read.place.contacts, {
      phones: ['+377 93 15 48 52', '+377 93 15 48 53'],
      emails: ['Info@Cafe-Test.MC'],
      websites: [],
      socials: ['https://www.facebook.com/cafetest', 'instagram:cafe_test'],
    });
    const stored = JSON.parse(
      normaliseSourceContacts(
        'osm',
        read.place.contacts,
        { email: read.place.email ?? null, phone: read.place.phone ?? null },
        'MC',
        normalisePhone,
      )!,
    );
    assert.deepEqual(stored.emails, [{ value: 'Info@cafe-test.mc', source: 'osm' }]);
    assert.deepEqual(
      stored.phones.map((p: { value: string }) => p.value),
      ['+37793154852', '+37793154853'],
    );
    assert.deepEqual(stored.socials.map((s: { network: string }) => s.network).sort(), ['facebook', 'instagram']);
    const plain = osmObjectToPlace('n2', { name: 'Plain', shop: 'bakery', phone: '+377 93 15 48 52' }, 43.73, 7.42);
    assert.ok(plain.ok);
    assert.equal(plain.place.contacts, undefined, "one phone is the place's phone: nothing more to keep");
  });
});

const found: FoundContacts = {
  site: 'https://shop.example/',
  emails: [
    {
      address: 'hello@shop.example',
      page: 'https://shop.example/kontakt',
      fetched_at: '2026-11-26T10:00:00.000Z',
      own_domain: true,
      verdict: 'deliverable_domain',
    },
  ],
  phones: [{ e164: '+4989123456', page: 'https://shop.example/kontakt', fetched_at: '2026-11-26T10:00:00.000Z' }],
  socials: [
    {
      network: 'instagram',
      url: 'https://www.instagram.com/shopexample',
      page: 'https://shop.example/',
      fetched_at: '2026-11-26T10:00:00.000Z',
    },
  ],
  contact_url: 'https://shop.example/kontakt',
};

function record(overrides: Partial<PlaceRecord>): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('test', 'p1'),
    source: 'test',
    source_id: 'p1',
    name: 'Shop',
    names: null,
    category: 'bakery',
    categories: ['bakery'],
    source_categories: null,
    phone: null,
    phone_e164: null,
    website: 'https://shop.example/',
    website_domain: 'shop.example',
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
    lat: 48.137,
    lon: 11.575,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
    closed: 0,
    ...overrides,
  };
  return { ...base, content_hash: contentHash(base) };
}

for (const dialect of dialects) {
  describe(`found contacts across re-imports (${dialect.name})`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(() => t.dispose());

    const publicPlace = async () => placeRowToPlace((await findPlaceRow(t.db, { publicId: publicPlaceId('test', 'p1') }))!);

    test('a re-import that changes the website hides what the old site gave at once; one that changes another field keeps it', async () => {
      await writePlaces(t.db, [record({})]);
      const row = await t.db.kysely.selectFrom('places').select('id').executeTakeFirstOrThrow();
      const sites = await repo.ensureSites(
        t.db,
        [{ key: 'shop.example', url: 'https://shop.example/', countryCode: 'DE' }],
        new Date().toISOString(),
      );
      await repo.linkPlaces(t.db, [
        {
          placeId: Number(row.id),
          siteId: sites.get('shop.example')!.id,
          basis: 'https://shop.example/',
          found: foundColumnsOf(JSON.stringify(found)),
        },
      ]);
      let place = await publicPlace();
      assert.equal(place.email, 'hello@shop.example');
      assert.equal(place.phone_e164, '+4989123456');
      assert.equal(place.contacts.socials[0]?.url, 'https://www.instagram.com/shopexample');

      await writePlaces(t.db, [record({ name: 'Shop & Café' })]);
      place = await publicPlace();
      assert.equal(place.name, 'Shop & Café');
      assert.equal(place.email, 'hello@shop.example', 'the writer never touches what enrichment found');

      await writePlaces(t.db, [record({ name: 'Shop & Café', website: 'https://new-shop.example/', website_domain: 'new-shop.example' })]);
      place = await publicPlace();
      assert.equal(place.email, null);
      assert.equal(place.phone, null);
      const { websites, ...others } = place.contacts;
      assert.deepEqual(others, { emails: [], phones: [], socials: [], contact_url: null });
      assert.deepEqual(
        websites.map((w) => [w.url, w.status]),
        [['https://new-shop.example/', 'unknown']],
        'the new website is listed, not fetched yet',
      );

      const filtered = await t.db.kysely.selectFrom('place_found_keys').select('key').execute();
      assert.ok(filtered.length > 0, 'the keys stay until the place is linked again; reads ignore them meanwhile');
    });

    test("a source's email and phone stay the place's; the found ones follow them in the contacts", async () => {
      await writePlaces(t.db, [record({ email: 'Owner@Shop.example', phone: '089 111', phone_e164: '+4989111' })]);
      const row = await t.db.kysely.selectFrom('places').select('id').executeTakeFirstOrThrow();
      const sites = await repo.ensureSites(
        t.db,
        [{ key: 'shop.example', url: 'https://shop.example/', countryCode: 'DE' }],
        new Date().toISOString(),
      );
      await repo.linkPlaces(t.db, [
        {
          placeId: Number(row.id),
          siteId: sites.get('shop.example')!.id,
          basis: 'https://shop.example/',
          found: foundColumnsOf(JSON.stringify(found)),
        },
      ]);
      const place = await publicPlace();
      assert.equal(place.email, 'Owner@Shop.example');
      assert.equal(place.phone, '+49 89 111', 'the international form of the number the source wrote as 089 111');
      assert.deepEqual(
        place.contacts.emails.map((e) => [e.address, e.source, e.verdict]),
        [
          ['Owner@Shop.example', 'test', null],
          ['hello@shop.example', 'website', 'deliverable_domain'],
        ],
      );
      assert.deepEqual(
        place.contacts.phones.map((p) => [p.e164, p.source, p.page]),
        [
          ['+4989111', 'test', null],
          ['+4989123456', 'website', 'https://shop.example/kontakt'],
        ],
      );
    });
  });
}
