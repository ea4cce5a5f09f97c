import { type Kysely, sql } from 'kysely';
import { dialectOf } from './helpers.ts';

/**
 * Full text that finds every place by its own name, and cities that GeoNames does not know.
 *
 * SQLite: `places_fts` holds each place's names folded (`la_search_document(name, names)`: the display name,
 * then every other name, each case-, accent- and letter-folded with ß → ss, ø → o, ł → l…, the letters of
 * Chinese and Japanese set apart by spaces, and the names separated by ` $ `) instead of the names as
 * written. The trigram tokenizer only folds case and the accents Unicode decomposes, and cannot look up a
 * word under three characters; on the folded document a two-letter word is the phrase ` xy` (a word that
 * starts with it) and one CJK letter ` 字 `, both three characters, and `"$ name $"` is a whole name.
 * `la_search_document` is a function every connection the application opens registers
 * (`database.ts`); the triggers and the import writer (`ftsNames`) call it.
 *
 * Both: an index on the folded address city of the places whose city GeoNames does not know
 * (`city_source = 'address_unmatched'`: villages, Tokyo's wards, townships), so that `city=` can be
 * resolved to the city such places are filed under. `la_fold(text)` is `foldText` on SQLite (registered
 * like `la_search_document`) and lower(unaccent()) on PostgreSQL (migration 0011). Partial: a few percent
 * of the places are in it, and only those cost an import anything.
 */
const deferred = 'WHEN NOT EXISTS (SELECT 1 FROM places_deferred_indexing)';

function ftsTriggers(document: (row: string) => string): string[] {
  return [
    `CREATE TRIGGER places_search_ai AFTER INSERT ON places ${deferred} BEGIN
       INSERT INTO places_fts(rowid, names) VALUES (new.id, ${document('new')});
     END`,
    `CREATE TRIGGER places_search_au_names AFTER UPDATE OF name, names ON places ${deferred} BEGIN
       DELETE FROM places_fts WHERE rowid = old.id;
       INSERT INTO places_fts(rowid, names) VALUES (new.id, ${document('new')});
     END`,
    `CREATE TRIGGER places_search_ad AFTER DELETE ON places BEGIN
       DELETE FROM places_fts WHERE rowid = old.id;
     END`,
  ];
}

async function rebuildFts(db: Kysely<any>, tokenize: string, document: (row: string) => string): Promise<void> {
  for (const t of ['places_search_ai', 'places_search_au_names', 'places_search_ad'])
    await sql.raw(`DROP TRIGGER IF EXISTS ${t}`).execute(db);
  await sql`DROP TABLE places_fts`.execute(db);
  await sql.raw(`CREATE VIRTUAL TABLE places_fts USING fts5(names, tokenize = '${tokenize}')`).execute(db);
  await sql.raw(`INSERT INTO places_fts(rowid, names) SELECT id, ${document('places')} FROM places`).execute(db);
  for (const create of ftsTriggers(document)) await sql.raw(create).execute(db);
}

const cityIndex = 'places_unmatched_city_idx';

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    await rebuildFts(db, 'trigram', (row) => `la_search_document(${row}.name, ${row}.names)`);
  }
  await sql.raw(`CREATE INDEX ${cityIndex} ON places (la_fold(city)) WHERE city_source = 'address_unmatched'`).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`DROP INDEX IF EXISTS ${cityIndex}`).execute(db);
  if (dialectOf(db) === 'sqlite') {
    const allNames = (row: string) =>
      `${row}.name || coalesce(' ' || (SELECT group_concat(value, ' ') FROM json_tree(${row}.names) WHERE type = 'text'), '')`;
    await rebuildFts(db, 'trigram remove_diacritics 1', allNames);
  }
}
