import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { startImportRun, testPlaceRecord, zeroCounters } from '../../../test/helpers/places.ts';
import { conflate } from '../conflation/conflation.service.ts';
import type { FoundContacts } from '../contacts/contacts.ts';
import type { StoredTrust } from '../contacts/trust.types.ts';
import type { TrustModel } from '../contacts/trust-model.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import type { PlaceRecord } from '../places/place-record.ts';
import { placeRowToPlace, publicPlaceSelection } from '../places/places.schema.ts';
import { createPlaceWriter } from '../places/places.writer.ts';
import { placesOfEmailDomains, placesOfSites } from './trust.repository.ts';
import { recomputeTrust, refreshTrust } from './trust.service.ts';

const record = testPlaceRecord;

for (const dialect of dialects) {
  describe(`the trust pass (${dialect.name})`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(async () => t.dispose());

    const importRun = async (records: PlaceRecord[], dataset: string) => {
      const runId = await startImportRun(t.db);
      await sql`UPDATE import_runs SET dataset = ${dataset}, source = ${records[0]!.source} WHERE id = ${runId}`.execute(t.db.kysely);
      await createPlaceWriter(t.db).writeBatch(records, runId, zeroCounters());
    };
    const placeOf = async (sourceId: string) => {
      const row = await t.db.kysely
        .selectFrom('places')
        .select([...publicPlaceSelection, 'places.email_status', 'places.phone_type', 'places.website_status', 'places.email_confidence'])
        .where('source_id', '=', sourceId)
        .where('merged_into', 'is', null)
        .executeTakeFirstOrThrow();
      return { row, place: placeRowToPlace(row) };
    };
    const idOf = async (sourceId: string) =>
      Number((await t.db.kysely.selectFrom('places').select('id').where('source_id', '=', sourceId).executeTakeFirstOrThrow()).id);

    test('judges every email, phone and website of a place and stores the summary searches filter on', async () => {
      await importRun(
        [
          record('osm', 'judged-1', {
            phone: '+49/89/593830',
            phone_e164: '+4989593830',
            email: 'info@ratskeller-muenchen.de',
            website: 'https://www.ratskeller-muenchen.de/',
            source_contacts: JSON.stringify({
              emails: [
                { value: 'info@ratskeller-muenchen.de', source: 'osm' },
                { value: 'anna.huber@gmail.com', source: 'osm' },
              ],
              phones: [
                { value: '+4989593830', source: 'osm' },
                { value: '+491711234567', source: 'osm' },
              ],
            }),
          }),
          record('osm', 'judged-2', { name: 'Kein Kontakt' }),
        ],
        'trust-a',
      );
      const pass = await refreshTrust(t.db);
      assert.equal(pass.full, true, 'the first pass judges everything');
      assert.equal(pass.changed, 2);

      const { row, place } = await placeOf('judged-1');
      assert.equal(place.phone, '+49 89 593830', 'the phone shows in its international form');
      assert.equal(place.phone_e164, '+4989593830');
      const [landline, mobile] = place.contacts.phones;
      assert.equal(landline!.as_written, '+49/89/593830');
      assert.equal(landline!.type, 'fixed_line');
      assert.equal(landline!.national, '089 593830');
      assert.equal(mobile!.type, 'mobile');
      const [info, anna] = place.contacts.emails;
      assert.deepEqual(
        [info!.role, info!.own_domain, info!.free_provider, info!.status],
        [true, true, false, 'unknown'],
        'no DNS check yet: the status is unknown',
      );
      assert.deepEqual([anna!.role, anna!.own_domain, anna!.free_provider], [false, false, true]);
      assert.deepEqual(
        place.contacts.websites.map((w) => [w.url, w.status, w.source_count]),
        [['https://www.ratskeller-muenchen.de/', 'unknown', 1]],
      );
      for (const v of [...place.contacts.emails, ...place.contacts.phones, ...place.contacts.websites]) {
        assert.ok(v.confidence > 0 && v.confidence < 1, `a confidence for ${JSON.stringify(v)}`);
        assert.ok(v.first_seen_at !== null && v.last_seen_at !== null);
      }
      assert.ok(place.lead_score > 0);
      assert.equal(row.email_status, 'unknown');
      assert.equal(row.website_status, 'unknown');
      assert.ok(['fixed_line', 'mobile'].includes(row.phone_type!));

      const bare = await placeOf('judged-2');
      assert.equal(bare.place.lead_score, 0, 'a place without contacts scores 0');
      assert.equal(bare.row.email_status, null);
    });

    test('a DNS verdict and a fetch of the website change statuses, confidences and the score of the places they concern', async () => {
      const id = await idOf('judged-1');
      const before = await placeOf('judged-1');
      const at = '2026-11-28T10:00:00.000Z';
      await t.db.kysely
        .insertInto('email_domains')
        .values({ domain: 'ratskeller-muenchen.de', status: 'valid_domain', checked_at: at })
        .execute();
      await t.db.kysely
        .insertInto('enrich_sites')
        .values({
          site_key: 'ratskeller-muenchen.de',
          url: 'https://www.ratskeller-muenchen.de/',
          status: 'done',
          due_at: at,
          site_status: 'live',
          status_checked_at: at,
        })
        .execute();
      const site = await t.db.kysely
        .selectFrom('enrich_sites')
        .select('id')
        .where('site_key', '=', 'ratskeller-muenchen.de')
        .executeTakeFirstOrThrow();
      await t.db.kysely
        .updateTable('places')
        .set({ enrich_site_id: Number(site.id), enrich_basis: 'https://www.ratskeller-muenchen.de/' })
        .where('id', '=', id)
        .execute();

      assert.deepEqual(await placesOfSites(t.db, [Number(site.id)]), [id]);
      assert.deepEqual(await placesOfEmailDomains(t.db, ['ratskeller-muenchen.de']), [id]);
      const pass = await refreshTrust(t.db);
      assert.equal(pass.full, false, 'caught up from the change log');
      assert.equal(pass.changed, 1);

      const { row, place } = await placeOf('judged-1');
      const info = place.contacts.emails[0]!;
      assert.equal(info.status, 'valid_domain');
      assert.equal(info.checked_at, at);
      assert.ok(info.confidence > before.place.contacts.emails[0]!.confidence, 'a valid domain raises the confidence');
      assert.equal(place.contacts.websites[0]!.status, 'live');
      assert.equal(row.email_status, 'valid_domain');
      assert.equal(row.website_status, 'live');
      assert.ok(place.lead_score > before.place.lead_score);

      const again = await refreshTrust(t.db);
      assert.equal(again.changed, 0, 'its own writes come back through the log and are found unchanged');
      assert.equal(await refreshTrust(t.db).then((r) => r.places), 0, 'then nothing is left to judge');
    });

    test('found contacts count as the website source, and values two sources give count both', async () => {
      const phone = { phone: '089 2222 333', phone_e164: '+49892222333', name: 'Osteria Italiana', lat: 48.1401, lon: 11.5801 };
      await importRun([record('osm', 'merge-t', { ...phone, email: 'osteria@osteria-italiana.de' })], 'osm-trust');
      await conflate(t.db);
      await importRun([record('michelin', 'merge-t', phone)], 'michelin-trust');
      await conflate(t.db);
      const merged = await t.db.kysely
        .selectFrom('places')
        .select('merged_into')
        .where('source_id', '=', 'merge-t')
        .where('merged_into', 'is not', null)
        .execute();
      assert.ok(merged.length >= 1, 'the two records became one place');
      const placeId = Number(merged[0]!.merged_into);
      const found: FoundContacts = {
        site: 'https://osteria-italiana.de/',
        emails: [
          {
            address: 'osteria@osteria-italiana.de',
            page: 'https://osteria-italiana.de/kontakt',
            fetched_at: '2026-11-27T09:00:00.000Z',
            own_domain: true,
            verdict: 'deliverable_domain',
          },
        ],
        phones: [],
        socials: [],
        contact_url: null,
      };
      const basis = await t.db.kysely.selectFrom('places').select(['website', 'email']).where('id', '=', placeId).executeTakeFirstOrThrow();
      await t.db.kysely
        .updateTable('places')
        .set({
          found_contacts: JSON.stringify(found),
          found_email: 'osteria@osteria-italiana.de',
          enrich_basis: basis.website ?? basis.email,
        })
        .where('id', '=', placeId)
        .execute();
      await refreshTrust(t.db);
      const stored = await t.db.kysely
        .selectFrom('places')
        .select(['contact_trust', 'phone_confidence'])
        .where('id', '=', placeId)
        .executeTakeFirstOrThrow();
      const trust = JSON.parse(stored.contact_trust!) as StoredTrust;
      assert.deepEqual([...trust.phones[0]!.sources].sort(), ['michelin', 'osm'], 'both sources carry the phone');
      assert.deepEqual(trust.emails[0]!.sources.sort(), ['osm', 'website']);
      assert.equal(trust.emails[0]!.status, 'valid_domain', "enrichment's verdict when email_domains has none");
      const single = await t.db.kysely
        .selectFrom('places')
        .select('phone_confidence')
        .where('source_id', '=', 'judged-1')
        .executeTakeFirstOrThrow();
      assert.ok(
        stored.phone_confidence! > single.phone_confidence!,
        'a phone two sources agree on is trusted more than one of a single source',
      );
    });

    test('a new model version judges every place again; recomputeTrust judges the places it is given', async () => {
      const model: TrustModel = {
        version: 'test-flat',
        kinds: {
          email: { intercept: 0, coefficients: {} },
          phone: { intercept: 0, coefficients: {} },
          website: { intercept: 0, coefficients: {} },
        },
      };
      const total = Number(
        (
          await t.db.kysely
            .selectFrom('places')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      const pass = await refreshTrust(t.db, { model });
      assert.equal(pass.full, true);
      assert.equal(pass.places, total);
      const { place } = await placeOf('judged-1');
      assert.ok(place.contacts.emails.every((e) => e.confidence === 0.5));
      const version = await placesVersion(t.db);
      assert.equal(await recomputeTrust(t.db, [await idOf('judged-1')], model), 0, 'the same model gives the same result: nothing written');
      assert.equal(await placesVersion(t.db), version);
      await refreshTrust(t.db, { all: true });
    });
  });
}
