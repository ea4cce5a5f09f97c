/**
 * The contract between authentication (modules/auth, plugins/auth.ts) and every protected route.
 *
 * A route declares what it needs in its options: `{ config: { scope: 'search' } }`. The auth plugin's
 * onRequest hook verifies `Authorization: Bearer <token>` on every route that declares a scope,
 * answers 401/403 problem+json itself, and sets `request.auth` before the handler runs.
 */
export const scopes = ['places:read', 'search', 'export', 'suppressions:write', 'enrich', 'monitors', 'match'] as const;
export type Scope = (typeof scopes)[number];

export interface AuthContext {
  accountId: number;
  /** The API token used, null for a dashboard session. */
  tokenId: number | null;
  scopes: ReadonlySet<Scope>;
  via: 'token' | 'session';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth plugin on routes that declare a scope; null elsewhere. */
    auth: AuthContext | null;
  }
  interface FastifyContextConfig {
    /** The scope a token needs for this route; its presence makes the route protected. */
    scope?: Scope;
  }
}
