import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** A query string with no parameter at all. */
const NoParameters = Type.Object({}, { additionalProperties: false });

/**
 * An API route that takes no query parameters says so to a client that sends one (400, naming it), the
 * way routes with parameters refuse unknown ones: a misspelt `per_page` or an `account_id` that a client
 * hopes will select another account is an error, not silently ignored. Register before the routes.
 */
export const strictQueryPlugin = fp(async function strictQueryPlugin(app: FastifyInstance) {
  app.addHook('onRoute', (route) => {
    if (!/^\/(api|v1)\//.test(route.url) || route.schema?.querystring !== undefined) return;
    route.schema = { ...route.schema, querystring: NoParameters };
  });
});
