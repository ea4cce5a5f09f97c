/**
 * What the monitor benches load a catalog with: monitors drawn from its (category, city) pairs across many
 * accounts, and batches of changes that rename random places and close one in ten, in one transaction each (as
 * a change file's commit). Shared by bench/monitors.ts and bench/background.ts.
 */
import { sql } from 'kysely';
import type { Db } from '../../src/infra/db/database.ts';
import { insertMonitor, matchingPlaces } from '../../src/modules/monitors/monitors.repository.ts';
import { placesVersion } from '../../src/modules/places/place-changes.repository.ts';
import { noCriteria, type PlaceCriteria } from '../../src/modules/search/query/criteria.ts';

export interface MonitorLoad {
  /** The pairs monitors were drawn from (at most `maxPlaces` places each). */
  pairs: Array<{ category: string | null; city_id: number | string | null; city: string | null; n: number }>;
  /** The accounts that own them (100). */
  accounts: number[];
  /** Places the monitors hold in all. */
  members: number;
  seconds: number;
}

/** Deletes every monitor, then makes `count` type + city monitors of at most `maxPlaces` places each. */
export async function makeMonitors(db: Db, count: number, maxPlaces: number, random: () => number): Promise<MonitorLoad> {
  await db.kysely.deleteFrom('monitor_events').execute();
  await db.kysely.deleteFrom('monitor_places').execute();
  await db.kysely.deleteFrom('monitors').execute();
  const pairs = await db.kysely
    .selectFrom('places')
    .select(['category', 'city_id', 'city', (eb) => eb.fn.countAll<number>().as('n')])
    .where('category', 'is not', null)
    .where('city_id', 'is not', null)
    .where('closed_at', 'is', null)
    .groupBy(['category', 'city_id', 'city'])
    .having((eb) => eb.fn.countAll(), '<=', maxPlaces)
    .execute();
  const now = new Date().toISOString();
  const accounts: number[] = [];
  for (let i = 0; i < 100; i++) {
    const email = `bench-monitors-${Date.now()}-${i}@example.com`;
    const row = await db.kysely
      .insertInto('accounts')
      .values({ email, email_norm: email, password_hash: 'x', created_at: now, password_changed_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    accounts.push(Number(row.id));
  }
  const started = performance.now();
  const version = await placesVersion(db);
  let members = 0;
  for (let i = 0; i < count; i++) {
    const pair = pairs[Math.floor(random() * pairs.length)]!;
    const criteria: PlaceCriteria = { ...noCriteria, categories: [pair.category!], cityId: Number(pair.city_id) };
    const places = await matchingPlaces(db, criteria, { limit: maxPlaces + 1 });
    members += places.length;
    await insertMonitor(
      db,
      {
        public_id: `mon_bench${String(i).padStart(9, '0')}`,
        account_id: accounts[i % accounts.length]!,
        search_id: 'srch_benchbenchbenchbe',
        criteria: JSON.stringify({ criteria, onlyNew: false }),
        events: 'added,closed,changed',
        webhook_url: null,
        status: 'active',
        version,
        created_at: now,
        updated_at: now,
      },
      places,
    );
  }
  return { pairs, accounts, members, seconds: (performance.now() - started) / 1000 };
}

/** A function that, each call, renames `changes` random open places and closes one in ten, in one transaction. */
export async function changeBatches(db: Db, changes: number, random: () => number): Promise<() => Promise<void>> {
  const ids = (await db.kysely.selectFrom('places').select('id').where('closed_at', 'is', null).execute()).map((r) => Number(r.id));
  const now = new Date().toISOString();
  let batchNo = 0;
  return async () => {
    batchNo++;
    const chosen = new Set<number>();
    while (chosen.size < Math.min(changes, ids.length)) chosen.add(ids[Math.floor(random() * ids.length)]!);
    const list = [...chosen];
    await db.kysely.transaction().execute(async (trx) => {
      for (let i = 0; i < list.length; i += 500) {
        const part = list.slice(i, i + 500);
        await trx
          .updateTable('places')
          .set({ name: sql`name || ${` b${batchNo}`}`, content_hash: sql`content_hash || ${`-${batchNo}`}` })
          .where('id', 'in', part)
          .execute();
        await trx
          .updateTable('places')
          .set({ closed_at: now, closed_reason: 'closed' })
          .where(
            'id',
            'in',
            part.filter((_, k) => k % 10 === 0),
          )
          .execute();
      }
    });
  };
}
