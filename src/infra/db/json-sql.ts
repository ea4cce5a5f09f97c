import { type RawBuilder, sql } from 'kysely';
import { byDialect } from './dialect.ts';

/**
 * Whether a JSON array stored as text (a column such as `places.categories`) holds `value`: SQLite
 * through `json_each`, PostgreSQL through `jsonb_exists` on the text cast to jsonb.
 */
export const jsonArrayContains = byDialect<(column: RawBuilder<unknown>, value: string) => RawBuilder<boolean>>({
  sqlite: () => (column, value) => sql<boolean>`EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${value})`,
  postgres: () => (column, value) => sql<boolean>`jsonb_exists(${column}::jsonb, ${value})`,
});
