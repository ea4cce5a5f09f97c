/**
 * The bench catalog (an SQLite file, lib/catalog.ts) in a schema of the local PostgreSQL, for the API
 * benchmark's PostgreSQL column: the schema is migrated and given its reference data (`prepareDatabase`),
 * the import runs and places are copied with their ids (`COPY … FROM STDIN`, infra/db/pg-copy.ts, into
 * `places` with its indexes), the sequences moved past them, and the schema analysed. The schema is the
 * caller's to drop (`dropSchema`).
 */
import pg from 'pg';
import { prepareDatabase } from '../../src/bootstrap.ts';
import { openDatabase } from '../../src/infra/db/database.ts';
import { type CopyValue, copyIn, copyTextOfRows } from '../../src/infra/db/pg-copy.ts';

/** `url` with its connections' search_path set to `schema`. */
export const inSchema = (url: string, schema: string): string =>
  `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;

export async function loadCatalogIntoPostgres(
  sqlitePath: string,
  adminUrl: string,
  schema: string,
  log: (m: string) => void,
): Promise<{ url: string; seconds: number }> {
  const started = performance.now();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const url = inSchema(adminUrl, schema);
  const db = openDatabase(url);
  const source = openDatabase(`sqlite:${sqlitePath}`, { readonly: true });
  try {
    await prepareDatabase(db);
    const runs = await source.kysely.selectFrom('import_runs').selectAll().execute();
    if (runs.length > 0) await db.kysely.insertInto('import_runs').values(runs).execute();
    const columns = (
      (await db.kysely
        .selectFrom('information_schema.columns' as never)
        .select('column_name' as never)
        .where('table_schema' as never, '=', schema as never)
        .where('table_name' as never, '=', 'places' as never)
        .execute()) as Array<{ column_name: string }>
    ).map((c) => c.column_name);
    const rows = source
      .sqlite!.prepare(`SELECT ${columns.join(', ')} FROM places ORDER BY id`)
      .raw()
      .iterate() as Iterable<CopyValue[]>;
    const client = await db.pgPool!.connect();
    try {
      const copied = await copyIn(client, `COPY places (${columns.join(', ')}) FROM STDIN`, copyTextOfRows(rows));
      log(`  ${copied} places copied into PostgreSQL schema ${schema} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
      for (const table of ['places', 'import_runs']) {
        await client.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), coalesce((SELECT max(id) FROM ${table}), 1))`);
      }
      await client.query('ANALYZE');
    } finally {
      client.release();
    }
  } finally {
    await source.close();
    await db.close();
  }
  return { url, seconds: (performance.now() - started) / 1000 };
}

export async function dropSchema(adminUrl: string, schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await admin.end();
  }
}
