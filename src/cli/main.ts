import { Command } from 'commander';
import { ConfigError } from '../config.ts';
import { AppError } from '../infra/errors.ts';
import { registerDb } from './commands/db.ts';
import { registerEnrich } from './commands/enrich.ts';
import { registerFollow } from './commands/follow.ts';
import { registerFormats } from './commands/formats.ts';
import { registerHours } from './commands/hours.ts';
import { registerImport } from './commands/import.ts';
import { registerMarket } from './commands/market.ts';
import { registerMatch } from './commands/match.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerMonitors } from './commands/monitors.ts';
import { registerServe } from './commands/serve.ts';
import { registerStats } from './commands/stats.ts';
import { registerTrust } from './commands/trust.ts';
import { registerVerify } from './commands/verify.ts';
import { CommandFailure, withDb } from './options.ts';

/** The command line: one file per command in commands/, the option parsers they share in options.ts. */
const program = new Command()
  .name('leadatlas')
  .description(
    'LeadAtlas business-data API: serve, import and inspect the place catalog.\nConfiguration comes from environment variables (see README).',
  )
  .showHelpAfterError();

for (const register of [
  registerServe,
  registerMigrate,
  registerImport,
  registerMarket,
  registerFollow,
  registerMonitors,
  registerEnrich,
  registerFormats,
  registerStats,
  registerMatch,
  registerHours,
  registerTrust,
  registerVerify,
  registerDb,
])
  register(program);

// The account and token commands (and their password hashing) load only when the command line may be one of
// them: less start-up for every other command. Commander's own options go before the command name.
const ownCommands = new Set(program.commands.map((c) => c.name()));
const commandName = process.argv.slice(2).find((a) => !a.startsWith('-'));
if (commandName === undefined || !ownCommands.has(commandName)) {
  const { registerAuthCommands } = await import('../modules/auth/auth.cli.ts');
  registerAuthCommands(program, withDb);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  if (error instanceof CommandFailure) {
    console.error(error.message);
    process.exit(error.exitCode);
  }
  if (error instanceof AppError) {
    console.error(`leadatlas: ${error.message}`);
    for (const e of error.extras.errors ?? [])
      console.error(`  ${e.field}: ${e.message}${e.allowed ? ` (allowed: ${JSON.stringify(e.allowed)})` : ''}`);
    // EX_IOERR of sysexits.h for a full disk: the command may be run again once there is room.
    process.exit(error.code === 'insufficient_storage' ? 74 : 2);
  }
  throw error;
}
