import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { describeAuthSuite } from '../../../test/helpers/auth-suite.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import type { App } from '../../app.ts';
import { polygonLimits } from './polygon.ts';
import { SearchPageSchema } from './search.schema.ts';

/**
 * `POST /api/v2/map/search` with a drawn area, on the real OSM extract of Munich's centre: the places
 * found are exactly those in the polygon (holes excluded), counted, paged and exported alike.
 */

FormatRegistry.Set('date-time', (v) => !Number.isNaN(Date.parse(v)));

const munichPbf = new URL('../../../../shared/data/osm/munich-center-2020.osm.pbf', import.meta.url).pathname;

type Box = [minLon: number, minLat: number, maxLon: number, maxLat: number];
const ring = ([a, b, c, d]: Box): number[][] => [
  [a, b],
  [c, b],
  [c, d],
  [a, d],
  [a, b],
];
const outer: Box = [11.555, 48.13, 11.59, 48.15];
// Around the Marienplatz: the hole.
const hole: Box = [11.57, 48.134, 11.58, 48.141];
const west: Box = [11.565, 48.142, 11.575, 48.15];
const east: Box = [11.58, 48.141, 11.59, 48.15];

interface Page {
  search_id: string;
  total: number;
  data: Array<{ id: string; lat: number; lon: number; name: string }>;
  links: { next: string | null };
}

const inside = ([a, b, c, d]: Box, p: { lon: number; lat: number }) => p.lon >= a && p.lon <= c && p.lat >= b && p.lat <= d;
const strictlyInside = ([a, b, c, d]: Box, p: { lon: number; lat: number }) => p.lon > a && p.lon < c && p.lat > b && p.lat < d;

for (const dialect of dialects) {
  describe(`POST /api/v2/map/search with a polygon on ${dialect.name}`, () => {
    let t: TestApp;
    let user: TestAccount;
    let all: Array<{ public_id: string; lat: number; lon: number }>;
    before(async () => {
      t = await buildTestApp({ dialect: dialect.name, files: [munichPbf] });
      user = await createAccountWithToken(t.db);
      // Open places only: the extract has places marked disused or vacant, which a search leaves out.
      all = (await t.db.kysely
        .selectFrom('places')
        .select(['public_id', 'lat', 'lon'])
        .where('lat', 'is not', null)
        .where('closed_at', 'is', null)
        .execute()) as typeof all;
    });
    after(async () => t.close());

    const post = (body: unknown, account: TestAccount = user) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v2/map/search',
        headers: { authorization: account.authorization, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });

    /** Every place of a search: its first page, then links.next (GET with the cursor) to the end. */
    async function everyPlace(first: Page): Promise<Page['data']> {
      const out = [...first.data];
      let next = first.links.next;
      while (next) {
        const res = await t.app.inject({
          method: 'GET',
          url: next.replace(/^https?:\/\/[^/]+/, ''),
          headers: { authorization: user.authorization },
        });
        assert.equal(res.statusCode, 200, res.body);
        const page = res.json() as Page;
        out.push(...page.data);
        next = page.links.next;
      }
      return out;
    }

    async function exported(searchId: string): Promise<string[]> {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v2/map/export?search_id=${searchId}&format=ndjson`,
        headers: { authorization: user.authorization },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.body
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { id: string }).id);
    }

    test('a polygon with a hole: exactly the places of the ring, none of the hole; pages and the export agree', async () => {
      const expected = all
        .filter((p) => inside(outer, p) && !strictlyInside(hole, p))
        .map((p) => p.public_id)
        .sort();
      assert.ok(all.filter((p) => strictlyInside(hole, p)).length > 50, 'the hole holds places to exclude');
      assert.ok(expected.length > 100);
      const res = await post({ polygon: { type: 'Polygon', coordinates: [ring(outer), ring(hole).reverse()] }, per_page: 100 });
      assert.equal(res.statusCode, 200, res.body);
      const first = res.json() as Page;
      assert.deepEqual(
        [...Value.Errors(SearchPageSchema, first)].map((e) => `${e.path}: ${e.message}`),
        [],
      );
      assert.equal(first.total, expected.length);
      const found = await everyPlace(first);
      assert.deepEqual(found.map((p) => p.id).sort(), expected);
      assert.ok(found.every((p) => !strictlyInside(hole, p)));
      assert.deepEqual((await exported(first.search_id)).sort(), expected);
    });

    test('a MultiPolygon: the places of each part', async () => {
      const expected = all
        .filter((p) => inside(west, p) || inside(east, p))
        .map((p) => p.public_id)
        .sort();
      assert.ok(expected.length > 20);
      const res = await post({ polygon: { type: 'MultiPolygon', coordinates: [[ring(west)], [ring(east)]] }, per_page: 100 });
      assert.equal(res.statusCode, 200, res.body);
      const first = res.json() as Page;
      assert.equal(first.total, expected.length);
      assert.deepEqual((await everyPlace(first)).map((p) => p.id).sort(), expected);
      assert.deepEqual((await exported(first.search_id)).sort(), expected);
    });

    test('a triangle (not a box): decided by the exact test, not by its bounding box', async () => {
      const triangle = [
        [11.555, 48.13],
        [11.59, 48.13],
        [11.555, 48.15],
        [11.555, 48.13],
      ];
      // Below the hypotenuse from (11.59, 48.13) to (11.555, 48.15).
      const under = (p: { lon: number; lat: number }) =>
        p.lon >= 11.555 && p.lat >= 48.13 && (p.lon - 11.555) / 0.035 + (p.lat - 48.13) / 0.02 <= 1;
      const expected = all
        .filter(under)
        .map((p) => p.public_id)
        .sort();
      const res = await post({ polygon: { type: 'Polygon', coordinates: [triangle] }, per_page: 100 });
      const first = res.json() as Page;
      assert.equal(first.total, expected.length);
      assert.ok(first.total < all.filter((p) => inside(outer, p)).length / 1.5);
      assert.deepEqual((await everyPlace(first)).map((p) => p.id).sort(), expected);
    });

    test('takes the filters of the GET form with it', async () => {
      const res = await post({
        polygon: { type: 'Polygon', coordinates: [ring(outer)] },
        type: 'restaurant',
        has_website: true,
        per_page: 100,
      });
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json() as Page & { resolved: { type: { slug: string } } };
      assert.equal(page.resolved.type.slug, 'restaurant');
      assert.ok(page.total > 0 && page.total < 200);
      const plain = await post({ polygon: { type: 'Polygon', coordinates: [ring(outer)] }, per_page: 1 });
      assert.ok((plain.json() as Page).total > page.total);
    });

    const bad: Array<[string, unknown, string]> = [
      ['a Point', { type: 'Point', coordinates: [11.5, 48.1] }, 'body.polygon.type'],
      [
        'an open ring',
        {
          type: 'Polygon',
          coordinates: [
            ring(outer)
              .slice(0, 4)
              .concat([[11.5, 48.2]]),
          ],
        },
        'body.polygon.coordinates[0]',
      ],
      [
        'a ring of three positions',
        {
          type: 'Polygon',
          coordinates: [
            [
              [11.5, 48.1],
              [11.6, 48.1],
              [11.5, 48.1],
            ],
          ],
        },
        'body.polygon.coordinates[0]',
      ],
      [
        'a longitude out of range',
        {
          type: 'Polygon',
          coordinates: [
            [
              [11.5, 48.1],
              [200, 48.1],
              [11.6, 48.2],
              [11.5, 48.1],
            ],
          ],
        },
        'body.polygon.coordinates[0][1]',
      ],
      [
        'a position that is not two numbers',
        {
          type: 'Polygon',
          coordinates: [
            [
              [11.5, 48.1],
              ['x', 48.1],
              [11.6, 48.2],
              [11.5, 48.1],
            ],
          ],
        },
        'body.polygon.coordinates[0][1]',
      ],
      [
        'a collapsed ring',
        {
          type: 'Polygon',
          coordinates: [
            [
              [11.5, 48.1],
              [11.6, 48.1],
              [11.5, 48.1],
              [11.5, 48.1],
            ],
          ],
        },
        'body.polygon.coordinates[0]',
      ],
      [
        'too many positions',
        {
          type: 'Polygon',
          coordinates: [
            Array.from({ length: polygonLimits.maxVertices + 1 }, (_, i) =>
              i === polygonLimits.maxVertices ? [11.5, 48.1] : [11.5 + Math.cos(i) / 100, 48.1 + Math.sin(i) / 100],
            ),
          ],
        },
        'body.polygon.coordinates',
      ],
      ['a world-sized span', { type: 'Polygon', coordinates: [ring([-100, -40, 100, 60])] }, 'body.polygon'],
      ['a MultiPolygon part that is not rings', { type: 'MultiPolygon', coordinates: [[ring(west)], 5] }, 'body.polygon.coordinates[1]'],
      ['no coordinates', { type: 'Polygon' }, 'body.polygon.coordinates'],
    ];
    for (const [what, polygon, field] of bad) {
      test(`${what} is a 400 problem naming ${field}`, async () => {
        const res = await post({ polygon });
        assert.equal(res.statusCode, 400, res.body);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        const problem = res.json() as { errors: Array<{ field: string; allowed?: unknown }> };
        assert.deepEqual(
          problem.errors.map((e) => e.field),
          [field],
        );
        assert.ok(problem.errors[0]!.allowed !== undefined, 'says what is allowed');
      });
    }

    test('no polygon, or parameters of the GET form that a polygon replaces, are a 400 naming them', async () => {
      const missing = await post({ type: 'restaurant' });
      assert.equal(missing.statusCode, 400);
      assert.match(JSON.stringify((missing.json() as { errors: unknown[] }).errors), /polygon/);
      const withBbox = await post({ polygon: { type: 'Polygon', coordinates: [ring(outer)] }, bbox: '11,48,12,49' });
      assert.equal(withBbox.statusCode, 400);
      assert.match(JSON.stringify((withBbox.json() as { errors: unknown[] }).errors), /bbox/);
    });

    if (dialect.name === 'sqlite') {
      describeAuthSuite(
        {
          method: 'POST',
          url: '/api/v2/map/search',
          scope: 'search',
          payload: { polygon: { type: 'Polygon', coordinates: [ring(hole)] }, per_page: 1 },
          headers: { 'content-type': 'application/json' },
        },
        () => ({ app: t.app as App, db: t.db }),
      );
    }
  });
}
