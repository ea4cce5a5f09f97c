import type { Command } from 'commander';
import { prepareDatabase } from '../../bootstrap.ts';
import { log, withDb } from '../options.ts';

/** `leadatlas migrate`: the schema and the reference data. */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply schema migrations and refresh reference data (categories, countries, cities)')
    .action(() => withDb((db) => prepareDatabase(db, log)));
}
