import type { FastifyRequest } from 'fastify';

/** The language asked for: `lang`, else the first tag of Accept-Language. */
export function requestLang(request: FastifyRequest, lang: string | undefined): string | null {
  if (lang) return lang.toLowerCase();
  const header = request.headers['accept-language'];
  const first = typeof header === 'string' ? header.split(',')[0]?.split(';')[0]?.trim() : undefined;
  return first && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(first) ? first.toLowerCase() : null;
}
