import type { Db } from '../../../infra/db/database.ts';
import { byDialect } from '../../../infra/db/dialect.ts';
import { placeChangesSince, placesVersion } from '../../places/place-changes.repository.ts';
import { countPlaces, factsShape } from './engine.repository.ts';
import type { FactColumns } from './fact-columns.ts';
import { IndexSnapshotFile } from './index-snapshot.ts';

type Log = { warn(obj: unknown, msg: string): void; info(obj: unknown, msg: string): void };

/**
 * Where the snapshot of this database lives (`SEARCH_INDEX_SNAPSHOT`): beside an SQLite file, under `./var` for
 * PostgreSQL; null for `off` and an in-memory database.
 */
export function snapshotPathOf(setting: string | undefined, db: Db): string | null {
  if (setting === 'off') return null;
  return setting ?? defaultSnapshotPath(db);
}

const defaultSnapshotPath = byDialect<string | null>({
  sqlite: ({ sqlitePath }) => (sqlitePath === undefined ? null : `${sqlitePath}.search-index`),
  postgres: () => './var/search-index.snapshot',
});

/** Facts at a places version, by column: what the index is built from, read from the database or a snapshot. */
export interface FactsAt {
  version: number;
  facts: FactColumns;
}

/**
 * The engine's snapshot (`SEARCH_INDEX_SNAPSHOT`): where a server's first index comes from when it can, and
 * where each build from the database is written. A snapshot is used only when the change log still reaches
 * back to its version (the engine then applies the changes since, as a running node does), was made by the
 * same facts query, and is not ahead of the database; after it is brought up to date, the index must hold as
 * many places as the database, or the file belonged to another catalog and the index is built anew.
 */
export class EngineSnapshot {
  private readonly file: IndexSnapshotFile;

  constructor(
    private readonly db: Db,
    path: string,
    private readonly log?: Log,
  ) {
    this.file = new IndexSnapshotFile(path);
  }

  get path(): string {
    return this.file.path;
  }

  /** The snapshot's facts when they can start the index, else null (the reason logged). */
  async load(): Promise<FactsAt | null> {
    const started = performance.now();
    const shape = await factsShape(this.db);
    if (!shape) return null;
    const read = await this.file.read(shape);
    const refuse = (reason: string, detail: string) => {
      this.log?.info({ path: this.file.path, reason, detail }, 'search index snapshot not used: building from the database');
      return null;
    };
    if (!read.ok) return refuse(read.reason, read.detail);
    const { version, facts } = read.snapshot;
    const current = await placesVersion(this.db);
    if (version > current) return refuse('stale', `snapshot at version ${version}, the database at ${current}`);
    if (!(await placeChangesSince(this.db, version, 1)).complete)
      return refuse('stale', `the change log no longer reaches back to version ${version}`);
    this.log?.info(
      { path: this.file.path, version, current, places: facts.size, ms: Math.round(performance.now() - started) },
      'search index snapshot read',
    );
    return { version, facts };
  }

  /** Whether an index loaded from the snapshot and brought up to date holds as many places as the database. */
  async holdsCatalog(places: number): Promise<boolean> {
    const counted = await countPlaces(this.db);
    if (counted !== places)
      this.log?.warn({ path: this.file.path, index: places, database: counted }, 'search index snapshot of another catalog');
    return counted === places;
  }

  /** Writes the facts of a build from the database; a failure is logged, never thrown (the index is built). */
  async save({ version, facts }: FactsAt): Promise<void> {
    if (facts.size === 0) return;
    try {
      const started = performance.now();
      const bytes = await this.file.write(version, { digest: (await factsShape(this.db))!.digest, columns: facts.names }, facts);
      this.log?.info(
        { path: this.file.path, version, bytes, ms: Math.round(performance.now() - started) },
        'search index snapshot written',
      );
    } catch (error) {
      this.log?.warn({ err: error, path: this.file.path }, 'the search index snapshot could not be written');
    }
  }
}
