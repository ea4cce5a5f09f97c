import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyTypeProvider } from 'fastify';

/**
 * Types a route's request and reply from its TypeBox schemas, as `Static` of the TypeBox the schemas are made
 * with (@sinclair/typebox). @fastify/type-provider-typebox 6 derives them with `typebox` 1, which reads some
 * of these schemas differently (an enum made with `Type.Unsafe` becomes `unknown`), which the routes used to
 * paper over with casts of their request.
 */
export interface TypeBoxTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
}
