import type { Kysely, Selectable } from 'kysely';
import type { AccountsTable, Database, SessionsTable } from '../../infra/db/schema.ts';

export type AccountRow = Selectable<AccountsTable>;
export type SessionRow = Selectable<SessionsTable>;

export function findAccountByEmailNorm(db: Kysely<Database>, emailNorm: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('email_norm', '=', emailNorm).executeTakeFirst();
}

export function findAccountById(db: Kysely<Database>, id: number): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Inserts an account; undefined when the normalised email is taken. */
export async function insertAccount(
  db: Kysely<Database>,
  row: { email: string; email_norm: string; password_hash: string; created_at: string },
): Promise<AccountRow | undefined> {
  return db
    .insertInto('accounts')
    .values({ ...row, password_changed_at: row.created_at })
    .onConflict((oc) => oc.column('email_norm').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function updatePasswordHash(db: Kysely<Database>, id: number, passwordHash: string, at: string): Promise<void> {
  await db.updateTable('accounts').set({ password_hash: passwordHash, password_changed_at: at }).where('id', '=', id).execute();
}

export async function insertSession(db: Kysely<Database>, row: SessionRow): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

export function findLiveSession(db: Kysely<Database>, idHash: string, now: string): Promise<(SessionRow & { email: string }) | undefined> {
  return db
    .selectFrom('sessions')
    .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
    .selectAll('sessions')
    .select('accounts.email')
    .where('sessions.id_hash', '=', idHash)
    .where('sessions.expires_at', '>', now)
    .executeTakeFirst();
}

export async function deleteSession(db: Kysely<Database>, idHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
}

/** Ends every session of an account except `keepIdHash` (the one that changed the password). */
export async function deleteOtherSessions(db: Kysely<Database>, accountId: number, keepIdHash: string | null): Promise<void> {
  let q = db.deleteFrom('sessions').where('account_id', '=', accountId);
  if (keepIdHash) q = q.where('id_hash', '!=', keepIdHash);
  await q.execute();
}

export async function deleteExpiredSessions(db: Kysely<Database>, accountId: number, now: string): Promise<void> {
  await db.deleteFrom('sessions').where('account_id', '=', accountId).where('expires_at', '<=', now).execute();
}
