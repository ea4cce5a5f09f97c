import { Parser } from 'htmlparser2';

/**
 * Whether a home page is a domain-parking or domain-for-sale page rather than a business's site (docs/trust.md).
 * Two kinds of sign, read with htmlparser2 (never patterns over markup):
 * - the page loads, frames, links to or posts to a parking or domain-marketplace service (`sedoparking.com`,
 *   `parkingcrew.net`, `bodis.com`, GoDaddy's parking lander, `dan.com`, `afternic.com`…): decisive alone;
 * - its visible text says so (`this domain is for sale`, `buy this domain`, `diese Domain steht zum Verkauf`,
 *   `domain parked`…) and is short: a parking page holds a few lines; a business's page that mentions a
 *   sale of domains in a long text is not one.
 */

/** Hosts (and their subdomains) of parking services and domain marketplaces. */
const PARKING_HOSTS = [
  'sedoparking.com',
  'parkingcrew.net',
  'bodis.com',
  'above.com',
  'parklogic.com',
  'domainsponsor.com',
  'cashparking.com',
  'voodoo.com',
  'skenzo.com',
  'trafficz.com',
  'fabulous.com',
  'dan.com',
  'afternic.com',
  'hugedomains.com',
  'undeveloped.com',
  'buydomains.com',
  'domainmarket.com',
  'brandbucket.com',
  'squadhelp.com',
  'efty.com',
  'parked.com',
  'domainparking.ru',
  'parkingpage.namecheap.com',
  'sedo.com',
  'uniregistry.com',
  'domainnamesales.com',
  'epik.com',
  'porkbun.com',
];

/** Paths of a parking page's scripts on a general host: GoDaddy's lander, Google's AdSense for domains. */
const PARKING_PATHS = ['/parking-lander/', '/adsense/domains/caf.js', '/parkingpage'];

const PHRASES = [
  'this domain is for sale',
  'this domain may be for sale',
  'domain is for sale',
  'domain name is for sale',
  'domain for sale',
  'buy this domain',
  'buy this domain name',
  'make an offer on this domain',
  'inquire about this domain',
  'this domain name is available',
  'this domain has been registered',
  'this domain is parked',
  'domain parked',
  'parked free',
  'parked domain',
  'this web page is parked',
  'this page is parked',
  'is parked free',
  'registered at namecheap.com',
  'get this domain',
  'the domain has expired',
  'this domain has expired',
  'domain expired',
  'diese domain steht zum verkauf',
  'diese domain kaufen',
  'diese domain ist geparkt',
  'domain ist geparkt',
  'domain steht zum verkauf',
  'ce nom de domaine est à vendre',
  'ce domaine est à vendre',
  'este dominio está a la venta',
  'este dominio esta a la venta',
  'questo dominio è in vendita',
  'dit domein is te koop',
  'este domínio está à venda',
];

/** Above this much visible text a page is a site, whatever a sentence of it says. */
const SHORT_PAGE_CHARS = 2_500;

function hostOf(value: string, base: string | undefined): string | null {
  try {
    return new URL(value, base ?? 'http://invalid.invalid/').hostname.toLowerCase();
  } catch {
    return null;
  }
}

function isParkingUrl(value: string, base: string | undefined, scripted: boolean): boolean {
  const host = hostOf(value, base);
  if (host === null || host === 'invalid.invalid') return false;
  if (PARKING_HOSTS.some((h) => host === h || host.endsWith(`.${h}`))) return true;
  const lower = value.toLowerCase();
  return scripted && /^(https?:)?\/\//.test(lower) && PARKING_PATHS.some((p) => lower.includes(p));
}

/** Whether `html` (the home page, fetched from `url`) is a parking or for-sale page. */
export function isParkedPage(html: string, url?: string): boolean {
  let text = '';
  let skip = 0;
  let fingerprint = false;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (name === 'script' || name === 'style' || name === 'noscript' || name === 'template') skip++;
        for (const attr of ['src', 'href', 'action', 'data-src']) {
          const value = attributes[attr];
          if (!value) continue;
          const scripted = name === 'script' || name === 'iframe' || name === 'frame' || name === 'form';
          if (scripted && isParkingUrl(value, url, true)) fingerprint = true;
          // A link to a marketplace is a sign only from a page that is mostly that link: weighed below with the text.
          else if (name === 'a' && isParkingUrl(value, url, false)) text += ' [parking-link] ';
        }
        if (name === 'meta' && attributes['http-equiv']?.toLowerCase() === 'refresh') {
          const target = /url\s*=\s*['"]?([^'";]+)/i.exec(attributes.content ?? '')?.[1];
          if (target && isParkingUrl(target.trim(), url, true)) fingerprint = true;
        }
      },
      onclosetag(name) {
        if ((name === 'script' || name === 'style' || name === 'noscript' || name === 'template') && skip > 0) skip--;
      },
      ontext(data) {
        if (skip === 0 && text.length <= SHORT_PAGE_CHARS * 4) text += data;
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html.length > 2_000_000 ? html.slice(0, 2_000_000) : html);
  parser.end();
  if (fingerprint) return true;
  const visible = text.replace(/\s+/g, ' ').trim().toLowerCase();
  if (visible.length > SHORT_PAGE_CHARS) return false;
  return visible.includes('[parking-link]')
    ? PHRASES.some((p) => visible.includes(p)) || visible.length < 600
    : PHRASES.some((p) => visible.includes(p));
}
