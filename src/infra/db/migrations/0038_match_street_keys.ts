import { type Kysely, sql } from 'kysely';

/**
 * Street keys (`s:<street word>:<name word>`, `conflation/blocking.ts`): list matching finds a record that
 * has an address and no point or known city by them. Imports write them from now on; the records already in
 * the catalog with a street address are marked due for conflation with their keys to be rewritten
 * (`changed` 1), which the next import's conflation pass does. Computing the keys needs the application's
 * name and street forms, which a migration does not import.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`INSERT INTO place_match_due (place_id, changed)
    SELECT id, 1 FROM places WHERE sources IS NULL AND (street IS NOT NULL OR address IS NOT NULL)
    ON CONFLICT (place_id) DO UPDATE SET changed = 1`.execute(db);
}

export async function down(): Promise<void> {}
