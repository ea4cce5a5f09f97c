import type { Scope } from '../../modules/auth/auth.types.ts';

/**
 * What a request costs against its caller's rate limit, in units. Routes are priced by the scope
 * they need (a route may set `config: { cost }` of its own): reading the account's leads or the
 * reference lists is cheap, a search runs the catalog's indexes, an export streams a whole search.
 * Requests without a valid token (pages, /docs, /healthz, refused calls) cost one unit of their IP's limit.
 */
export const scopeCosts: Record<Scope, number> = { 'places:read': 1, search: 2, export: 20, 'suppressions:write': 2, enrich: 20 };
export const unauthenticatedCost = 1;
export const maxRouteCost = Math.max(...Object.values(scopeCosts));
