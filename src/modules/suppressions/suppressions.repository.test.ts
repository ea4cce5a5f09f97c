import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccountWithToken } from '../../../test/helpers/accounts.ts';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import {
  commitUpload,
  deleteAllEntries,
  deleteEntry,
  discardStaleUploads,
  discardUpload,
  findListState,
  listEntries,
  stageEntries,
} from './suppressions.repository.ts';
import { detectKind, normaliseEntry } from './suppressions.service.ts';

for (const dialect of dialects) {
  describe(`suppressions repository on ${dialect.name}`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await dialect.open('migrated');
    });
    after(async () => t.dispose());

    const at = '2026-11-24T00:00:00.000Z';

    test('a staged upload is invisible until committed, then lands once per key with counts and a new revision', async () => {
      const { accountId } = await createAccountWithToken(t.db);
      const upload = { id: 'upl_a', accountId, at };
      await stageEntries(t.db, upload, 0, [
        { kind: 'phone', key: '+49892199890', value: '089 21 99 89 0' },
        { kind: 'domain', key: 'example.com', value: 'www.example.com' },
        { kind: 'phone', key: '+49892199890', value: '+49 89 2199890' },
      ]);
      await stageEntries(t.db, upload, 3, [{ kind: 'place', key: 'plc_aaaaaaaaaaaaaaaa', value: 'plc_aaaaaaaaaaaaaaaa' }]);
      assert.equal(await findListState(t.db, accountId), null);
      assert.deepEqual(await listEntries(t.db, accountId, { afterId: 0, limit: 10 }), []);
      assert.equal(await commitUpload(t.db, 'upl_a', accountId, at), 3);
      const state = await findListState(t.db, accountId);
      assert.deepEqual(state, { revision: 1, counts: { phone: 1, domain: 1, email: 0, place: 1 } });
      const rows = await listEntries(t.db, accountId, { afterId: 0, limit: 10 });
      assert.deepEqual(
        rows.map((r) => [r.kind, r.key, r.value]),
        [
          ['phone', '+49892199890', '089 21 99 89 0'],
          ['domain', 'example.com', 'www.example.com'],
          ['place', 'plc_aaaaaaaaaaaaaaaa', 'plc_aaaaaaaaaaaaaaaa'],
        ],
      );
      assert.equal((await t.db.kysely.selectFrom('suppression_uploads').selectAll().where('upload_id', '=', 'upl_a').execute()).length, 0);

      // Again: nothing new, the revision still moves.
      await stageEntries(t.db, { ...upload, id: 'upl_b' }, 0, [{ kind: 'domain', key: 'example.com', value: 'example.com' }]);
      assert.equal(await commitUpload(t.db, 'upl_b', accountId, at), 0);
      assert.equal((await findListState(t.db, accountId))!.revision, 2);
    });

    test('a discarded or stale upload leaves nothing; removal is per account', async () => {
      const owner = await createAccountWithToken(t.db);
      const other = await createAccountWithToken(t.db);
      await stageEntries(t.db, { id: 'upl_c', accountId: owner.accountId, at }, 0, [
        { kind: 'email', key: 'a@b.example', value: 'A@b.example' },
      ]);
      await discardUpload(t.db, 'upl_c');
      await stageEntries(t.db, { id: 'upl_old', accountId: owner.accountId, at: '2020-01-01T00:00:00.000Z' }, 0, [
        { kind: 'email', key: 'x@y.example', value: 'x@y.example' },
      ]);
      await discardStaleUploads(t.db, owner.accountId, at);
      assert.equal(
        (await t.db.kysely.selectFrom('suppression_uploads').selectAll().where('account_id', '=', owner.accountId).execute()).length,
        0,
      );

      await stageEntries(t.db, { id: 'upl_d', accountId: owner.accountId, at }, 0, [
        { kind: 'email', key: 'a@b.example', value: 'a@b.example' },
        { kind: 'email', key: 'c@d.example', value: 'c@d.example' },
      ]);
      await commitUpload(t.db, 'upl_d', owner.accountId, at);
      const [first] = await listEntries(t.db, owner.accountId, { afterId: 0, limit: 1, kind: 'email' });
      assert.equal(await deleteEntry(t.db, other.accountId, first!.id, at), false, "another account's entry");
      assert.equal(await deleteAllEntries(t.db, other.accountId, at), 0);
      assert.equal(await deleteEntry(t.db, owner.accountId, first!.id, at), true);
      assert.deepEqual((await findListState(t.db, owner.accountId))!.counts.email, 1);
      assert.equal(await deleteAllEntries(t.db, owner.accountId, at), 1);
      assert.deepEqual((await findListState(t.db, owner.accountId))!.counts, { phone: 0, domain: 0, email: 0, place: 0 });
    });
  });
}

describe('entries: type detection and normalised keys', () => {
  test('untyped values are detected', () => {
    assert.equal(detectKind('plc_3f7kq2m5x7ab4cde'), 'place');
    assert.equal(detectKind('Sales@Example.com'), 'email');
    assert.equal(detectKind('mailto:sales@example.com'), 'email');
    assert.equal(detectKind('+49 (0) 89 21 99 89 0'), 'phone');
    assert.equal(detectKind('089/2199890'), 'phone');
    assert.equal(detectKind('https://www.example.co.uk/x'), 'domain');
    assert.equal(detectKind('example.com'), 'domain');
  });

  test('phones become E.164 whatever their format; a national number needs its country', () => {
    const key = (value: string, country?: string) => {
      const n = normaliseEntry({ type: 'phone', value }, country);
      return n.ok ? n.entry.key : n.message;
    };
    for (const [value, country] of [
      ['+49 (0) 89 21 99 89 0'],
      ['0049 89 2199890'],
      ['089 21 99 89 0', 'DE'],
      ['089/2199890', 'de'],
    ] as Array<[string, string?]>) {
      assert.equal(key(value, country), '+49892199890', value);
    }
    assert.match(key('089 21 99 89 0'), /give its country/);
  });

  test('domains become the registrable domain; emails lower case; garbage is refused', () => {
    const key = (value: string) => {
      const n = normaliseEntry({ value }, undefined);
      return n.ok ? `${n.entry.kind}:${n.entry.key}` : `refused: ${n.message}`;
    };
    assert.equal(key('HTTPS://www.Shop.Example.co.uk:8080/path?q=1'), 'domain:example.co.uk');
    assert.equal(key('someone.github.io'), 'domain:someone.github.io');
    assert.equal(key('café.fr'), 'domain:xn--caf-dma.fr');
    assert.equal(key(' mailto:Sales@Example.COM '), 'email:sales@example.com');
    assert.match(key('not a thing'), /^refused/);
    assert.match(key('localhost'), /^refused/);
    assert.match(normaliseEntry({ type: 'place', value: 'plc_short' }, undefined).ok ? '' : 'refused', /refused/);
  });
});
