import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from '../../src/infra/db/database.ts';
import { searchDocument } from '../../src/infra/text.ts';
import { findCitiesFiledAs } from '../../src/modules/geo/address-cities.ts';
import { noCriteria, type PlaceCriteria } from '../../src/modules/search/query/criteria.ts';
import { createSearchReads } from '../../src/modules/search/search.reads.ts';
import { runCli } from '../helpers/cli.ts';
import { copySqliteTemplate } from '../helpers/templates.ts';
import { runTool } from '../helpers/tools.ts';

/** The read tasks as a read-pool thread runs them (its count cache included). */
const { searchPage } = createSearchReads();

const michelin = resolve(import.meta.dirname, '../../../shared/data/places/michelin-guide-2022-6510.csv.gz');

const criteria = (over: Partial<PlaceCriteria>): PlaceCriteria => ({ ...noCriteria, ...over });

describe("an imported SQLite database in Debian's sqlite3 shell", () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadatlas-shell-'));
  const path = join(dir, 'leadatlas.db');
  const shell = (script: string) => runTool('sqlite3', ['-bail', path], { input: script }).toString().trim();

  before(async () => {
    // The schema and the reference data as the import would write them first, copied from the template.
    await copySqliteTemplate('prepared', path);
    const out = runCli(['import', michelin], { DATABASE_URL: `sqlite:${path}` });
    assert.equal(out.status, 0, out.stderr);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('no index, trigger or view of the schema calls a function only the application registers', () => {
    const objects = shell(
      "SELECT type || ' ' || name FROM sqlite_master WHERE sql LIKE '%la\\_fold(%' ESCAPE '\\' OR sql LIKE '%la\\_search\\_document(%' ESCAPE '\\';",
    );
    assert.equal(objects, '');
  });

  test('checks the file, vacuums it and updates a place; the application then finds the place by its new name', async () => {
    assert.equal(shell('PRAGMA integrity_check;'), 'ok');
    assert.equal(shell('VACUUM;'), '');
    const target = shell('SELECT public_id FROM places WHERE closed_reason IS NULL AND names IS NULL ORDER BY id LIMIT 1;');
    assert.match(target, /^plc_/);
    // What a user of the shell writes: the new name, and its search document (`$ name $` for a plain ASCII name).
    const name = 'Zqxwv Shell Bistro';
    shell(
      `UPDATE places SET name = '${name}', search_document = '$ zqxwv shell bistro $', phone = '+33 1 23 45 67 89' WHERE public_id = '${target}';`,
    );
    assert.equal(searchDocument(name, null), '$ zqxwv shell bistro $', 'the document the shell wrote is the one the application would');
    assert.equal(shell('PRAGMA integrity_check;'), 'ok');

    const db = openDatabase(`sqlite:${path}`);
    try {
      const page = await searchPage(db, criteria({ text: { words: ['zqxwv'], mode: 'substring' } }), 'name', null, 10);
      assert.deepEqual(
        page.rows.map((r) => [r.public_id, r.name, r.phone]),
        [[target, name, '+33 1 23 45 67 89']],
      );
      // The index of unmatched address cities, rebuilt by VACUUM, still answers for such a city.
      const unmatched = db
        .sqlite!.prepare(
          "SELECT city, city_id, country_code FROM places WHERE city_source = 'address_unmatched' AND city_id IS NOT NULL LIMIT 1",
        )
        .get() as { city: string; city_id: number; country_code: string } | undefined;
      assert.ok(unmatched, 'the Michelin guide has places in towns GeoNames does not know');
      assert.ok((await findCitiesFiledAs(db, unmatched.city.toUpperCase(), unmatched.country_code)).includes(unmatched.city_id));
    } finally {
      await db.close();
    }
  });
});
