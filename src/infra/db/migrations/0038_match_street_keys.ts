import { type Kysely, sql } from 'kysely';

/**
 * Blocking keys for list matching (`conflation/blocking.ts`): street keys (`s:<street word>:<name word>`), by
 * which a record with an address and no point or known city finds its place, and coarse-grid keys
 * (`g:<cell>:<name word>`), by which a record placed only by its city probes a few cells instead of hundreds.
 * Imports write them from now on; the records already in the catalog are marked due for conflation with their
 * keys to be rewritten (`changed` 1), which the next import's conflation pass does. Computing the keys needs the
 * application's name and street forms, which a migration does not import.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`INSERT INTO place_match_due (place_id, changed)
    SELECT id, 1 FROM places WHERE sources IS NULL
    ON CONFLICT (place_id) DO UPDATE SET changed = 1`.execute(db);
}

export async function down(): Promise<void> {}
