import { sql, type RawBuilder, type SqlBool } from 'kysely';

/**
 * Open at a moment (`open_now`, `open_at`): `clock` 'utc', `at` an instant; 'local', `at` a wall-clock time of
 * each place (both in seconds since 1970 on that clock, docs/opening-hours.md). `unparsed`: the places whose
 * hours could not be parsed instead. The opening-hours tables are this module's; search asks through these.
 */
export interface OpenAt {
  clock: 'utc' | 'local';
  at: number;
  unparsed?: true;
}

/**
 * The places open at the moment (migration 0031): a probe of `place_hours`' primary key per place (a place has
 * one schedule), the schedule checked against the set of schedules open then, which the database reads once
 * per statement from one day of `place_open_intervals` (a few thousand schedules at most, whatever the
 * catalog's size).
 */
export function openCondition(open: OpenAt): RawBuilder<SqlBool> {
  if (open.unparsed)
    return sql<SqlBool>`EXISTS (SELECT 1 FROM place_hours AS oh WHERE oh.place_id = places.id AND oh.schedule_id = 0 AND oh.state = 'unparsed')`;
  const openSchedules = openSchedulesAt(open);
  // The place's schedule (one probe of place_hours' primary key) looked up in the set: both databases build the
  // set once per statement. As EXISTS with the set inside, SQLite probed one (place, schedule) pair per open
  // schedule and PostgreSQL drove the query from every open place of the catalog.
  return sql<SqlBool>`(SELECT oh.schedule_id FROM place_hours AS oh WHERE oh.place_id = places.id) IN ${openSchedules}`;
}

/**
 * The schedules open at the moment, as a subquery: one day of one kind of `place_open_intervals`. The search
 * engine reads the same set (`schedulesOpenAt`) to answer the open filter from its index.
 */
export function openSchedulesAt(open: OpenAt): RawBuilder<{ schedule_id: number }> {
  const day = Math.floor(open.at / 86_400);
  return sql`(SELECT oi.schedule_id FROM place_open_intervals AS oi WHERE oi.kind = ${open.clock === 'utc' ? 'u' : 'l'} AND oi.day = ${day} AND oi.start_s <= ${open.at} AND oi.end_s > ${open.at})`;
}
