import { randomBytes } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { type Command, InvalidArgumentError } from 'commander';
import type { Config } from '../../config.ts';
import type { Db } from '../../infra/db/database.ts';
import { migrateToLatest } from '../../infra/db/migrate.ts';
import { AppError } from '../../infra/errors.ts';
import { MemoryRateLimiter } from '../../infra/ratelimit/ratelimit.ts';
import { AccountService } from './accounts.service.ts';
import { scopes as knownScopes } from './auth.types.ts';
import { type AccountQuotas, type QuotaName, QuotaService, quotaNames } from './quotas.service.ts';
import { defaultExpiryDays, maxExpiryDays, TokenService } from './tokens.service.ts';

type WithDb = <T>(fn: (db: Db, config: Config) => Promise<T>) => Promise<T>;

/** `--expires-in 90d`, `90` or `never` → days, or null for no expiry. */
export function parseExpiresIn(value: string): number | null {
  if (value.trim().toLowerCase() === 'never') return null;
  const m = /^(\d{1,4})d?$/i.exec(value.trim());
  const days = m ? Number(m[1]) : Number.NaN;
  if (!Number.isInteger(days) || days < 1 || days > maxExpiryDays) {
    throw new InvalidArgumentError(`a number of days from 1 to ${maxExpiryDays} (e.g. 90d), or "never"`);
  }
  return days;
}

function parseScopes(value: string): string[] {
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = list.filter((s) => !(knownScopes as readonly string[]).includes(s));
  if (list.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`a comma-separated list of: ${knownScopes.join(', ')}`);
  return list;
}

/** A quota option: a whole number, or `default` to go back to the configured default. */
export function parseQuota(value: string): number | 'default' {
  if (value.trim().toLowerCase() === 'default') return 'default';
  if (!/^\d{1,13}$/.test(value.trim())) throw new InvalidArgumentError('a whole number from 0, or "default"');
  return Number(value.trim());
}

const quotaLabels: Record<QuotaName, string> = {
  requestsPerDay: 'API requests per day (UTC)',
  exportRowsPerMonth: 'exported rows per month',
  concurrentExports: 'exports at once',
  enrichPlacesPerMonth: 'places enriched per month',
  matchRowsPerMonth: 'list rows matched per month',
};

function printQuotas(email: string, quotas: AccountQuotas): void {
  console.log(`quotas of ${email}:`);
  for (const name of quotaNames)
    console.log(
      `  ${quotaLabels[name].padEnd(28)} ${String(quotas[name]).padStart(12)}  ${quotas.custom[name] ? 'set for this account' : 'default'}`,
    );
}

/** `leadatlas user create`, `token create` and `account quota`: accounts, tokens and quotas for automation and administrators. */
export function registerAuthCommands(program: Command, withDb: WithDb): void {
  const user = program.command('user').description('manage accounts');
  user
    .command('create')
    .description('create an account; without --password or --password-stdin a random password is generated and printed once')
    .requiredOption('--email <email>', 'the account email (unique, case-insensitive)')
    .option('--password <password>', 'the password (visible in the process list: prefer --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .action((opts: { email: string; password?: string; passwordStdin?: boolean }) =>
      withDb(async (db) => {
        await migrateToLatest(db);
        const generated = opts.password === undefined && !opts.passwordStdin;
        const password = opts.passwordStdin
          ? (await text(process.stdin)).replace(/\r?\n$/, '')
          : (opts.password ?? randomBytes(18).toString('base64url'));
        const account = await new AccountService(db, new MemoryRateLimiter()).signUp(opts.email, password, null);
        console.error(`created account ${account.id} <${account.email}>`);
        if (generated) console.log(password);
      }),
    );

  const account = program.command('account').description('administer accounts');
  account
    .command('quota')
    .description(
      'show an account\'s quotas, or set them (a number, or "default" for the configured default); running servers apply a change within 30 s',
    )
    .requiredOption('--email <email>', 'the account email')
    .option('--requests-per-day <n>', 'API requests per UTC day', parseQuota)
    .option('--export-rows-per-month <n>', 'exported rows per calendar month (UTC)', parseQuota)
    .option('--concurrent-exports <n>', 'exports running at once', parseQuota)
    .option('--enrich-places-per-month <n>', 'places queued for enrichment (POST /api/v2/enrichments) per calendar month (UTC)', parseQuota)
    .option(
      '--match-rows-per-month <n>',
      'rows of lists matched by match jobs (POST /api/v2/match/jobs) per calendar month (UTC)',
      parseQuota,
    )
    .action((opts: Partial<Record<QuotaName, number | 'default'>> & { email: string }) =>
      withDb(async (db, config) => {
        await migrateToLatest(db);
        const found = await new AccountService(db, new MemoryRateLimiter()).findByEmail(opts.email);
        if (!found)
          throw new AppError('not_found', `No account with email ${opts.email}`, {
            errors: [{ field: '--email', message: 'is not a known account email' }],
          });
        const quotas = new QuotaService(
          db,
          new MemoryRateLimiter(),
          {
            requestsPerDay: config.QUOTA_REQUESTS_PER_DAY,
            exportRowsPerMonth: config.QUOTA_EXPORT_ROWS_PER_MONTH,
            concurrentExports: config.QUOTA_CONCURRENT_EXPORTS,
            enrichPlacesPerMonth: config.QUOTA_ENRICH_PLACES_PER_MONTH,
            matchRowsPerMonth: config.QUOTA_MATCH_ROWS_PER_MONTH,
          },
          null,
        );
        // `default` is stored as null: the account follows the configured default again.
        const changes = Object.fromEntries(
          quotaNames.filter((n) => opts[n] !== undefined).map((n) => [n, opts[n] === 'default' ? null : opts[n]]),
        );
        printQuotas(
          found.email,
          Object.keys(changes).length > 0 ? await quotas.setQuotas(found.id, changes) : await quotas.forAccount(found.id),
        );
      }),
    );

  const token = program.command('token').description('manage personal access tokens');
  token
    .command('create')
    .description('create a personal access token and print it once on standard output')
    .requiredOption('--user <email>', 'email of the account that owns the token')
    .requiredOption('--name <name>', 'what the token is for, e.g. "CRM sync"')
    .option('--scopes <list>', `comma-separated scopes: ${knownScopes.join(', ')}`, parseScopes, [...knownScopes])
    .option('--expires-in <days>', `days until expiry (1 to ${maxExpiryDays}, e.g. 30d) or "never"`, parseExpiresIn, defaultExpiryDays)
    .action((opts: { user: string; name: string; scopes: string[]; expiresIn: number | null }) =>
      withDb(async (db) => {
        await migrateToLatest(db);
        const account = await new AccountService(db, new MemoryRateLimiter()).findByEmail(opts.user);
        if (!account)
          throw new AppError('not_found', `No account with email ${opts.user}`, {
            errors: [{ field: '--user', message: 'is not a known account email' }],
          });
        const created = await new TokenService(db).createToken({
          accountId: account.id,
          name: opts.name,
          scopes: opts.scopes,
          expiresInDays: opts.expiresIn,
        });
        const r = created.record;
        console.error(
          `token ${r.id} "${r.name}" for ${account.email}: scopes ${r.scopes.join(',')}, expires ${r.expiresAt ?? 'never (no expiry: revoke it when no longer needed)'}`,
        );
        console.error('the token is shown only this once:');
        console.log(created.token);
      }),
    );
}
