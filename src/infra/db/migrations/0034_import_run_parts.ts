import type { Kysely } from 'kysely';

/**
 * `import_run_parts`: the parts of a release split into files (`leadatlas import overture|foursquare`, or
 * `--dataset` with several files) that an import run has written whole, each recorded once its last places
 * are committed. An interrupted run of such a release is resumed by the same command: it reads only the parts
 * not listed here, and completing it retires what none of the parts held, as one uninterrupted run would.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('import_run_parts')
    .addColumn('run_id', 'bigint', (c) => c.notNull().references('import_runs.id').onDelete('cascade'))
    .addColumn('part', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('import_run_parts_pk', ['run_id', 'part'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('import_run_parts').execute();
}
