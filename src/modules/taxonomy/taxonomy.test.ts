import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { foldText } from '../../infra/text.ts';
import { loadTaxonomy } from './taxonomy.build.ts';
import { syncTaxonomy } from './taxonomy.ts';

describe('the taxonomy derived from the iD presets', () => {
  const { categories, patterns } = loadTaxonomy();
  const bySlug = new Map(categories.map((c) => [c.slug, c]));

  test('gives every category a unique slug of lower-case letters, digits and underscores', () => {
    assert.ok(categories.length > 500, `only ${categories.length} categories`);
    assert.equal(bySlug.size, categories.length);
    for (const c of categories) assert.match(c.slug, /^[a-z0-9]+(_[a-z0-9]+)*$/, c.presetId);
  });

  test('derives slugs from the preset path after the key', () => {
    assert.equal(bySlug.get('restaurant')?.presetId, 'amenity/restaurant');
    assert.equal(bySlug.get('optician')?.presetId, 'shop/optician');
    assert.equal(bySlug.get('restaurant_italian')?.presetId, 'amenity/restaurant/italian');
    assert.equal(bySlug.get('veterinary')?.presetId, 'amenity/veterinary');
    assert.equal(bySlug.get('bail_bond_agent')?.presetId, 'office/bail_bond_agent-US-PH');
  });

  test('resolves slug collisions by key priority and prefixes the loser with its key', () => {
    assert.equal(bySlug.get('swimming_pool')?.presetId, 'leisure/swimming_pool');
    assert.equal(bySlug.get('shop_swimming_pool')?.presetId, 'shop/swimming_pool');
    assert.equal(bySlug.get('pottery')?.presetId, 'shop/pottery');
    assert.equal(bySlug.get('craft_pottery')?.presetId, 'craft/pottery');
    assert.equal(bySlug.get('craft')?.presetId, 'craft');
    assert.equal(bySlug.get('shop_craft')?.presetId, 'shop/craft');
  });

  test('sets the parent to the nearest category up the preset path', () => {
    assert.equal(bySlug.get('restaurant_italian')?.parent, 'restaurant');
    assert.equal(bySlug.get('optician')?.parent, 'shop');
    assert.equal(bySlug.get('pitch_tennis')?.parent, 'pitch');
    assert.equal(bySlug.get('restaurant')?.parent, null);
    for (const c of categories) if (c.parent) assert.ok(bySlug.has(c.parent), `${c.slug} has unknown parent ${c.parent}`);
  });

  test('merges alias presets into their target instead of making them categories', () => {
    const slugOf = (presetId: string) => patterns.find((p) => p.presetId === presetId)?.slug;
    assert.equal(slugOf('amenity/university'), 'university');
    assert.equal(slugOf('shop/yes'), 'shop');
    assert.equal(slugOf('shop/boutique'), 'clothes');
    assert.equal(slugOf('craft/tailor'), 'tailor');
    assert.equal(slugOf('amenity/post_box/post_box-US'), 'post_box');
    assert.ok(!categories.some((c) => c.presetId === 'amenity/university' || c.presetId === 'shop/yes'));
  });

  test('leaves out fallback and replaced presets', () => {
    const ids = new Set(patterns.map((p) => p.presetId));
    for (const id of ['amenity', 'tourism', 'leisure', 'amenity/bus_station', 'highway/bus_stop']) assert.ok(!ids.has(id), id);
  });
});

for (const dialect of dialects) {
  describe(`syncTaxonomy on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(async () => t.dispose());

    test('writes categories and folded names once, then does nothing while the version is current', async () => {
      const first = await syncTaxonomy(t.db);
      assert.equal(first.changed, true);
      assert.match(first.version, /^@openstreetmap\/id-tagging-schema@\d+\.\d+\.\d+\+rules\.\d+$/);
      const count = async () => {
        const c = await t.db.kysely
          .selectFrom('categories')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        const n = await t.db.kysely
          .selectFrom('category_names')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        return Number(c.n) + Number(n.n);
      };
      assert.equal(await count(), first.rows);
      const second = await syncTaxonomy(t.db);
      assert.deepEqual(second, { version: first.version, rows: first.rows, changed: false });
      assert.equal(await count(), first.rows);
    });

    test('stores localised names and synonyms folded, with one display name per language', async () => {
      const optician = await t.db.kysely.selectFrom('categories').selectAll().where('slug', '=', 'optician').executeTakeFirstOrThrow();
      assert.deepEqual(
        { parent: optician.parent_slug, preset: optician.preset_id, tags: JSON.parse(optician.osm_tags), name: optician.name },
        { parent: 'shop', preset: 'shop/optician', tags: { shop: 'optician' }, name: 'Optician' },
      );
      const de = await t.db.kysely
        .selectFrom('category_names')
        .selectAll()
        .where('slug', '=', 'optician')
        .where('lang', '=', 'de')
        .execute();
      assert.ok(de.some((r) => r.name === 'Optiker' && r.name_norm === 'optiker' && r.is_name === 1));
      const vet = await t.db.kysely
        .selectFrom('category_names')
        .select('slug')
        .where('name_norm', '=', 'tierarzt')
        .where('lang', '=', 'de')
        .execute();
      assert.deepEqual(
        vet.map((r) => r.slug),
        ['veterinary'],
      );
      const sample = await t.db.kysely
        .selectFrom('category_names')
        .select(['name', 'name_norm'])
        .where('lang', '=', 'fr')
        .limit(200)
        .execute();
      for (const r of sample) assert.equal(r.name_norm, foldText(r.name));
      const displayNames = await t.db.kysely
        .selectFrom('category_names')
        .select(['slug', 'lang', (eb) => eb.fn.countAll<number>().as('n')])
        .where('is_name', '=', 1)
        .groupBy(['slug', 'lang'])
        .having((eb) => eb.fn.countAll(), '>', 1)
        .execute();
      assert.deepEqual(displayNames, []);
    });

    test('rewrites the tables when the stored version differs, without duplicating rows', async () => {
      const before = await syncTaxonomy(t.db);
      await t.db.kysely.updateTable('reference_data').set({ version: 'an older package' }).where('name', '=', 'categories').execute();
      const again = await syncTaxonomy(t.db);
      assert.equal(again.changed, true);
      assert.equal(again.rows, before.rows);
      const stored = await t.db.kysely
        .selectFrom('reference_data')
        .select(['version', 'row_count'])
        .where('name', '=', 'categories')
        .executeTakeFirstOrThrow();
      assert.deepEqual(stored, { version: before.version, row_count: before.rows });
    });
  });
}
