import type { FastifyInstance } from 'fastify';
import { overloadedOrPreparing, problemResponses } from '../../infra/http/problem.ts';
import { requestLang } from '../../infra/http/request-lang.ts';
import type { TypeBoxTypeProvider } from '../../infra/http/type-provider.ts';
import { AutocompleteQuerySchema, AutocompleteResponseSchema } from './autocomplete.schema.ts';
import { autocomplete } from './autocomplete.service.ts';
import type { Search } from './search.ts';

/** `GET /api/v2/autocomplete`: suggestions from the in-memory prefix index (`autocomplete.ts`). */
export function autocompleteRoute(appBase: FastifyInstance, search: Search): void {
  appBase.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/v2/autocomplete',
    {
      config: { scope: 'search' },
      schema: {
        tags: ['search'],
        operationId: 'autocomplete',
        summary: 'Suggest place names, categories or cities for what the user typed so far',
        description:
          'Suggestions for a search field, most places first: `kind=name` (default) the names of places (a prefix of any word, or of several ' +
          'words in order; every script), `kind=category` the categories by their names and aliases in every language the taxonomy ships ' +
          "(the name in the request's `Accept-Language` when the prefix matches one; `slug` is what `type=` takes), `kind=city` the cities with " +
          'places by any of their names (exonyms: `Cologne` finds Köln, `matched` says which). `count` is the number of open places each finds ' +
          '(in `country` when given). Answered from memory, rebuilt when the catalog changes (within seconds); not saved.',
        querystring: AutocompleteQuerySchema,
        response: { 200: AutocompleteResponseSchema, ...problemResponses(400), ...overloadedOrPreparing },
      },
    },
    async (request) => autocomplete(search, request.query, requestLang(request, undefined)),
  );
}
