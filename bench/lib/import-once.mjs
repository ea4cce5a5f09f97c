// One import with a compiled build, as `leadatlas import` runs it (reading on a worker thread). Run by
// bench/import-instructions.ts, under valgrind for the count and once without it to prepare the database:
//   node bench/lib/import-once.mjs BUILD_DIR DB_PATH --prepare   migrations and reference data only
//   node bench/lib/import-once.mjs BUILD_DIR DB_PATH FILE        the import; prints its summary as JSON
import { pathToFileURL } from 'node:url';

const [build, dbPath, file] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(`${build}/${path}`).href);
const { openDatabase } = await load('infra/db/database.js');
const db = openDatabase(`sqlite:${dbPath}`);
try {
  if (file === '--prepare') {
    const { prepareDatabase } = await load('bootstrap.js');
    await prepareDatabase(db);
  } else {
    const { runImport } = await load('modules/importers/import.service.js');
    // Under valgrind a transaction's second of wall time holds 1/50 of the work it holds at full speed, so
    // commits come more often than at full speed; both sides of a comparison share that.
    const summary = await runImport(db, null, file);
    console.log(JSON.stringify({ imported: summary.imported_count, updated: summary.updated_count, read: summary.read_count }));
  }
} finally {
  await db.close();
}
