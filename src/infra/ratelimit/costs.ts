/**
 * What a request costs against its caller's rate limit, in units. Routes are priced by the scope
 * they need (a route may set `config: { cost }` of its own): reading the account's leads or the
 * reference lists is cheap, a search runs the catalog's indexes, an export streams a whole search.
 * Requests without a valid token (pages, /docs, /healthz, refused calls) cost one unit of their IP's limit.
 *
 * Keyed by the scopes of modules/auth without importing them (infra depends on no module): the auth plugin
 * looks a route's price up by its `Scope`, which does not compile while a scope has no price here.
 */
export const scopeCosts = { 'places:read': 1, search: 2, export: 20, 'suppressions:write': 2, enrich: 20, monitors: 2, match: 10 } as const;
export const unauthenticatedCost = 1;
export const maxRouteCost = Math.max(...Object.values(scopeCosts));
