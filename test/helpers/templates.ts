import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type Db, openDatabase } from '../../src/infra/db/database.ts';
import { migrateToLatest } from '../../src/infra/db/migrate.ts';

/**
 * What a test database starts with when it is not empty: the schema (`migrated`), or the schema and the
 * reference data, categories, countries and GeoNames cities (`prepared`, what `prepareDatabase` leaves and
 * every server needs).
 *
 * Building either costs every test database the same seconds (the reference data is ~5 s and 80 MB a
 * database; the migrations ~1 s on PostgreSQL), so each is built once per machine into a template, and a
 * test database is a copy of it: a file copy on SQLite, `CREATE DATABASE … TEMPLATE` on PostgreSQL (a block
 * copy inside the server). A copy is a database of its own, as a fresh one was, so tests stay isolated.
 *
 * A template is keyed by a digest of everything that decides its content (the migrations and the database
 * layer, the reference-data code, the package versions, this file): a changed migration or package builds a
 * new one and never reads a stale copy. The build runs under a lock file, so two test processes starting
 * at once build it once; the other waits and copies. SQLite templates are kept in
 * `$LEADATLAS_CACHE_DIR/test-templates` (default: the system temp directory), PostgreSQL ones as databases
 * named `la_tpl_<kind>_<digest>` beside a marker file there.
 */
export type Template = 'migrated' | 'prepared';

const repoRoot = resolve(import.meta.dirname, '../..');
export const cacheDir = join(process.env.LEADATLAS_CACHE_DIR ?? join(tmpdir(), 'leadatlas-cache'), 'test-templates');
/** Templates unused this long (another branch's migrations, an old package) are removed when one is built. */
const keepUnusedMs = 2 * 24 * 3600_000;
/** A lock older than this belongs to a builder that died: a build takes seconds. */
const staleLockMs = 5 * 60_000;

/** What a template's content follows from: these files' text (tests excluded) and the installed packages. */
const keyedPaths = [
  'src/infra/db',
  'src/bootstrap.ts',
  'src/modules/geo',
  'src/modules/taxonomy',
  'package-lock.json',
  'test/helpers/templates.ts',
];

let digest: string | undefined;
export function templateDigest(): string {
  if (digest) return digest;
  const hash = createHash('sha256');
  const files = keyedPaths.flatMap((p) => walk(join(repoRoot, p))).sort();
  for (const file of files) hash.update(relative(repoRoot, file)).update('\0').update(readFileSync(file)).update('\0');
  digest = hash.digest('hex').slice(0, 16);
  return digest;
}

function walk(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(path, e.name)) : e.name.endsWith('.test.ts') ? [] : [join(path, e.name)],
  );
}

/** Fills a fresh database as its template says. */
async function fill(db: Db, template: Template): Promise<void> {
  if (template === 'migrated') return void (await migrateToLatest(db));
  // Loaded only to build: the reference-data modules cost a test that copies the template their loading time.
  const { prepareDatabase } = await import('../../src/bootstrap.ts');
  await prepareDatabase(db);
}

/**
 * Runs `build` unless `exists()`, under an exclusive lock file, so that of two processes that need the same
 * template one builds it and the other waits for it. `build` must publish atomically (a rename).
 */
export async function once(name: string, exists: () => Promise<boolean>, build: () => Promise<void>): Promise<void> {
  if (await exists()) return;
  mkdirSync(cacheDir, { recursive: true });
  const lock = join(cacheDir, `${name}.lock`);
  for (;;) {
    let fd: number;
    try {
      fd = openSync(lock, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (lockIsStale(lock)) rmSync(lock, { force: true });
      else await sleep(200);
      if (await exists()) return;
      continue;
    }
    try {
      writeSync(fd, String(process.pid));
      closeSync(fd);
      if (!(await exists())) await build();
      return;
    } finally {
      rmSync(lock, { force: true });
    }
  }
}

function lockIsStale(lock: string): boolean {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (Date.now() - statSync(lock).mtimeMs > staleLockMs) return true;
    if (!Number.isInteger(pid) || pid <= 0) return false; // being written
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // ESRCH: the builder is gone; ENOENT: the lock was just released
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Marks a template as used now (its file's or marker's time; `create`: the marker made if missing), so that pruning keeps it. */
function touch(path: string, create = false): void {
  const now = new Date();
  try {
    if (create) closeSync(openSync(path, 'a'));
    utimesSync(path, now, now);
  } catch {
    // a read-only cache folder only costs the pruning
  }
}

// ---------------------------------------------------------------------------------------------- SQLite

/** The path of the SQLite template file, built first if missing. */
async function sqliteTemplate(template: Template): Promise<string> {
  const name = `sqlite-${template}-${templateDigest()}`;
  const path = join(cacheDir, `${name}.db`);
  await once(
    name,
    async () => existsSync(path),
    async () => {
      const partial = join(cacheDir, `${name}.${process.pid}.${randomBytes(4).toString('hex')}.partial`);
      const db = openDatabase(`sqlite:${partial}`);
      try {
        await fill(db, template);
        // Everything into the main file (the copies are of that one file), then closed.
        db.sqlite!.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        await db.close();
      }
      for (const suffix of ['-wal', '-shm']) rmSync(partial + suffix, { force: true });
      renameSync(partial, path);
      prune('sqlite-', '.db');
    },
  );
  touch(path);
  return path;
}

/** Copies the template into `path` (a new file). */
export async function copySqliteTemplate(template: Template, path: string): Promise<void> {
  copyFileSync(await sqliteTemplate(template), path, constants.COPYFILE_FICLONE);
}

/** Removes the template files and PostgreSQL markers of this cache unused for `keepUnusedMs`. */
function prune(prefix: string, suffix: string): string[] {
  const removed: string[] = [];
  for (const f of readdirSync(cacheDir)) {
    if (!f.startsWith(prefix) || !f.endsWith(suffix) || f.includes(templateDigest())) continue;
    const path = join(cacheDir, f);
    try {
      if (Date.now() - statSync(path).mtimeMs < keepUnusedMs) continue;
      rmSync(path, { force: true });
      removed.push(f.slice(0, -suffix.length));
    } catch {
      // another process pruned it first
    }
  }
  return removed;
}

// ------------------------------------------------------------------------------------------ PostgreSQL

/** Every test database's tables live in this schema (as they did in a schema of their own in one database). */
export const postgresTestSchema = 'la_test';

function databaseUrl(adminUrl: string, database: string, schema?: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  if (schema) url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

async function withAdmin<T>(adminUrl: string, run: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    return await run(admin);
  } finally {
    await admin.end();
  }
}

/** `CREATE DATABASE` with the encoding and locale of the admin database (the one the tests used to share). */
async function createLikeAdmin(admin: pg.Client, name: string): Promise<void> {
  const { rows } = await admin.query<{ encoding: string; collate: string; ctype: string; provider: string; icu: string | null }>(
    `SELECT pg_encoding_to_char(encoding) AS encoding, datcollate AS collate, datctype AS ctype,
            datlocprovider::text AS provider, daticulocale AS icu
       FROM pg_database WHERE datname = current_database()`,
  );
  const d = rows[0]!;
  const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;
  const icu = d.provider === 'i' && d.icu ? ` LOCALE_PROVIDER icu ICU_LOCALE ${literal(d.icu)}` : '';
  await admin.query(
    `CREATE DATABASE ${name} TEMPLATE template0 ENCODING ${literal(d.encoding)} LC_COLLATE ${literal(d.collate)} LC_CTYPE ${literal(d.ctype)}${icu}`,
  );
}

/** The name of the PostgreSQL template database, built first if missing. */
async function postgresTemplate(adminUrl: string, template: Template): Promise<string> {
  const name = `la_tpl_${template}_${templateDigest()}`;
  const exists = () =>
    withAdmin(adminUrl, async (admin) => (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1);
  await once(name, exists, async () => {
    const building = `la_tplb_${randomBytes(6).toString('hex')}`;
    await withAdmin(adminUrl, async (admin) => {
      await createLikeAdmin(admin, building);
      try {
        const db = openDatabase(databaseUrl(adminUrl, building, postgresTestSchema));
        try {
          await sql(db, `CREATE SCHEMA ${postgresTestSchema}`);
          await fill(db, template);
        } finally {
          await db.close();
        }
        // Nobody may connect to a template while it is copied; the rename publishes it.
        await admin.query(`ALTER DATABASE ${building} WITH ALLOW_CONNECTIONS false`);
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } catch (error) {
        await admin.query(`DROP DATABASE IF EXISTS ${building}`);
        throw error;
      }
      // Another branch's or an old package's templates, unused for days.
      for (const old of prune('la_tpl_', '.pg')) await admin.query(`DROP DATABASE IF EXISTS ${old}`).catch(() => {});
    });
  });
  touch(join(cacheDir, `${name}.pg`), true);
  return name;
}

async function sql(db: Db, text: string): Promise<void> {
  await db.pgPool!.query(text);
}

/**
 * A new PostgreSQL database copied from the template: its name and its URL (the test schema on its
 * search_path). Dropped by `dropPostgresDatabase`.
 */
export async function copyPostgresTemplate(adminUrl: string, template: Template): Promise<{ database: string; url: string }> {
  const source = await postgresTemplate(adminUrl, template);
  const database = `la_t_${randomBytes(6).toString('hex')}`;
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${database} TEMPLATE ${source}`));
  return { database, url: databaseUrl(adminUrl, database, postgresTestSchema) };
}

/** Drops a test database, whoever is still connected to it. */
export async function dropPostgresDatabase(adminUrl: string, database: string): Promise<void> {
  await withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
}
