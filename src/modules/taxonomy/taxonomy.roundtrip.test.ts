import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { copyTestSqlite, type openTestSqlite } from '../../../test/helpers/databases.ts';
import { importFiles } from '../../bootstrap.ts';
import { createReadPool } from '../../infra/db/read-pool.ts';
import { createReadTasks, readTasksModule } from '../search/read-tasks.ts';
import { queryWords } from '../search/resolve.ts';
import { quickSearch } from '../search/search.service.ts';
import { createSearch } from '../search/search.ts';
import type { SearchDeps } from '../search/search.types.ts';
import { loadTaxonomy, loadTaxonomyNames } from './taxonomy.build.ts';
import { loadCategoryIndex } from './taxonomy.ts';

/**
 * Every category's own name in every locale the taxonomy ships, used as a user would: as `type=` with that
 * language, and as free text in a city that has places of that kind.
 */
const index = loadCategoryIndex();
const { categories } = loadTaxonomy();
const tagsOf = new Map(categories.map((c) => [c.slug, JSON.stringify(Object.entries(c.osmTags).sort())]));
const ownNames = loadTaxonomyNames().filter((n) => n.kind === 'name');

/** A resolution names the category when it lists it, one with the same OSM tags, or an ancestor (whose subtree holds it). */
const names = (slugs: readonly string[], slug: string) =>
  slugs.some((s) => s === slug || tagsOf.get(s) === tagsOf.get(slug) || index.subtree(s).includes(slug));

describe('the taxonomy round trip', () => {
  test('resolves every own name in every locale, as type= in that language, to its category', () => {
    const failures: string[] = [];
    let several = 0;
    for (const n of ownNames) {
      const r = index.resolve(n.name, n.lang);
      if (r.slugs.length > 1) several++;
      // No exception: a name that is also a slug (`Bar` in Catalan is the pub's, `bar` a slug) resolves to the slug's category and to its own.
      if (!names(r.slugs, n.slug)) failures.push(`${n.lang} ${n.name} (${n.slug}) → ${r.slugs.join(', ') || 'nothing'}`);
    }
    assert.deepEqual(failures, []);
    assert.ok(ownNames.length > 30_000, `${ownNames.length} own names`);
    // Names a language gives to several categories resolve to all of them, not silently to one.
    assert.ok(several > 100 && several < ownNames.length / 10, `${several} names resolve to several categories`);
  });

  test('resolves a term its language lists for several categories to the one whose name begins with it, or to them all', () => {
    const check = (term: string, lang: string, expected: string[]) =>
      assert.deepEqual([...index.resolve(term, lang).slugs].sort(), [...expected].sort(), `${term} (${lang})`);
    // German: the pharmacy's own name; the drugstore only lists it.
    check('Apotheke', 'de', ['pharmacy']);
    // Afrikaans names both the pharmacy and the chemist Apteek, the bar and the pub Kroeg.
    check('Apteek', 'af', ['chemist', 'pharmacy']);
    check('Kroeg', 'af', ['bar', 'pub']);
    // English lists pizza for the Italian restaurant and the pizza vending machine; three own names begin with it.
    check('pizza', 'en', ['fast_food_pizza', 'restaurant_pizza', 'vending_machine_pizza']);
    check('gym', 'en', ['fitness_centre']);
  });

  describe('as free text in a city that has places of that kind', () => {
    let t: ReturnType<typeof openTestSqlite>;
    let deps: SearchDeps;
    let inCity: Array<{ category: string; n: number }>;
    const munich = 2867714;
    before(async () => {
      t = await copyTestSqlite('prepared');
      await importFiles(t.db, [fileURLToPath(new URL('../../../../shared/data/osm/munich-center-2020.osm.pbf', import.meta.url))]);
      deps = createSearch(t.db, createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));
      const rows = await t.db.kysely
        .selectFrom('places')
        .select(['category', (eb) => eb.fn.countAll<number>().as('n')])
        .where('city_id', '=', munich)
        .where('category', 'is not', null)
        // What search finds: open places (the extract's vacant shops and disused pubs are closed).
        .where('closed_at', 'is', null)
        .groupBy('category')
        .execute();
      inCity = rows.map((r) => ({ category: r.category!, n: Number(r.n) }));
    });
    after(async () => t.dispose());

    test('finds the places of the kind for a sample of own names in every locale', async () => {
      const present = new Map(inCity.map((c) => [c.category, c.n]));
      // Every locale's name of every category Munich has, one in five (the sample moves across locales).
      const sample = ownNames.filter((n, i) => present.has(n.slug) && i % 5 === 0);
      const failures: string[] = [];
      let short = 0;
      let long = 0;
      for (const n of sample) {
        if ([...n.norm.replace(/ /g, '')].length < 3) {
          // Free text does not read terms under three letters as a kind of business (see business-words.ts).
          short++;
          continue;
        }
        if (n.name.split(/[^\p{L}\p{N}\p{M}]+/u).filter((w) => w !== '').length > queryWords(n.name).length) {
          // A query reads its first eight words (queryWords): a longer name is never the whole query.
          long++;
          continue;
        }
        const r = await quickSearch(deps, { query: n.name, city: 'München', per_page: 1 }, { lang: n.lang, location: 'querystring' });
        const type = r.resolution.type;
        if (!type || !names(type.includes, n.slug) || r.total < present.get(n.slug)!) {
          failures.push(
            `${n.lang} ${n.name} (${n.slug}: ${present.get(n.slug)}) → ${type?.categories?.map((c) => c.slug).join(', ') ?? 'no kind'}, total ${r.total}`,
          );
        }
      }
      assert.ok(sample.length > 1000, `${sample.length} names sampled`);
      assert.ok(short < sample.length / 50 && long < sample.length / 100, `${short} names under three letters, ${long} over eight words`);
      assert.deepEqual(failures, []);
    });
  });
});
