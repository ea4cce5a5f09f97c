import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * Open now / open at (issue #26; docs/opening-hours.md). Derived tables, rebuilt by the opening-hours pass
 * (`src/modules/places/opening-hours.repository.ts`) from `places.opening_hours`; nothing else writes them.
 *
 * `place_hours`: one row per place with hours: its time zone (from its coordinates), whether the value
 * parsed (`ok`) or not (`unparsed`, with the parser's reason) and, when it parsed, its schedule: the places
 * sharing an hours value, a time zone and (for values naming holidays) a country and region share one.
 * The primary key holds the schedule, so the search's probe per place reads the index alone.
 *
 * `place_open_intervals`: when each schedule is open over the pass's window, cut at day boundaries twice:
 * `kind` 'u', days and seconds in UTC (open now); `kind` 'l', days and seconds of the place's wall clock
 * (open at a local time). A search reads one day of one kind.
 *
 * `place_hours_state`: the places version and the window the tables were computed for.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('place_hours')
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .addColumn('schedule_id', 'integer', (c) => c.notNull())
    .addColumn('tz', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addPrimaryKeyConstraint('place_hours_pk', ['place_id', 'schedule_id'])
    .execute();
  if (dialectOf(db) === 'sqlite') {
    // Rebuilt as WITHOUT ROWID: the primary key is the table, so a probe by place reads one b-tree.
    await sql`DROP TABLE place_hours`.execute(db);
    await sql`CREATE TABLE place_hours (place_id integer NOT NULL, schedule_id integer NOT NULL, tz text, state text NOT NULL, reason text,
      PRIMARY KEY (place_id, schedule_id)) WITHOUT ROWID`.execute(db);
  }
  await sql`CREATE INDEX place_hours_unparsed_idx ON place_hours (place_id) WHERE state = 'unparsed'`.execute(db);
  await db.schema
    .createTable('place_open_intervals')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('start_s', 'bigint', (c) => c.notNull())
    .addColumn('end_s', 'bigint', (c) => c.notNull())
    .addColumn('schedule_id', 'integer', (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX place_open_intervals_idx ON place_open_intervals (kind, day, start_s, end_s, schedule_id)`.execute(db);
  await db.schema
    .createTable('place_hours_state')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('places_version', 'bigint', (c) => c.notNull())
    .addColumn('window_from', 'text', (c) => c.notNull())
    .addColumn('window_to', 'text', (c) => c.notNull())
    .addColumn('computed_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('place_hours_state').execute();
  await db.schema.dropTable('place_open_intervals').execute();
  await db.schema.dropTable('place_hours').execute();
}
