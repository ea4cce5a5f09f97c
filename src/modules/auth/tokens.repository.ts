import type { Insertable, Kysely, Selectable } from 'kysely';
import type { ApiTokensTable, Database } from '../../infra/db/schema.ts';

export type TokenRow = Selectable<ApiTokensTable>;

export function findTokenByHash(db: Kysely<Database>, tokenHash: string): Promise<TokenRow | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export function findAccountToken(db: Kysely<Database>, accountId: number, tokenId: number): Promise<TokenRow | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('id', '=', tokenId).where('account_id', '=', accountId).executeTakeFirst();
}

export function listAccountTokens(db: Kysely<Database>, accountId: number): Promise<TokenRow[]> {
  return db
    .selectFrom('api_tokens')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export async function insertToken(db: Kysely<Database>, row: Insertable<ApiTokensTable>): Promise<TokenRow> {
  return db.insertInto('api_tokens').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function markRevoked(db: Kysely<Database>, tokenId: number, at: string): Promise<void> {
  await db.updateTable('api_tokens').set({ revoked_at: at }).where('id', '=', tokenId).where('revoked_at', 'is', null).execute();
}

export async function markRotated(db: Kysely<Database>, tokenId: number, rotatedToId: number, graceUntil: string): Promise<void> {
  await db.updateTable('api_tokens').set({ rotated_to_id: rotatedToId, grace_until: graceUntil }).where('id', '=', tokenId).execute();
}

export async function recordLastUse(db: Kysely<Database>, tokenId: number, at: string, ip: string | null): Promise<void> {
  await db.updateTable('api_tokens').set({ last_used_at: at, last_used_ip: ip }).where('id', '=', tokenId).execute();
}
