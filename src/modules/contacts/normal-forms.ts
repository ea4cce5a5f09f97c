import { createRequire } from 'node:module';
import { registrableDomain } from '../../infra/web-domain.ts';

/** The normal forms of an email address and of a place's site, shared by the import, enrichment and the trust judgement. */

// A syntax check, not RFC 5322: a local part of common characters and a dotted host with a letter TLD.
export const EMAIL = /^[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

/** An email address with its domain lower-cased, or null when its syntax is not that of an address. */
export function normaliseEmail(raw: string): string | null {
  const text = raw
    .trim()
    .replace(/^mailto:/i, '')
    .split('?')[0]!;
  const at = text.lastIndexOf('@');
  if (at <= 0) return null;
  const address = `${text.slice(0, at)}@${text.slice(at + 1).toLowerCase()}`;
  return EMAIL.test(address) ? address : null;
}

/** Free mail providers' domains (the `email-providers` package): `gmail.com` is nobody's website. */
export const webmail: ReadonlySet<string> = new Set(createRequire(import.meta.url)('email-providers/all.json') as string[]);

/** A site to enrich a place from: its queue key, and the address the crawl starts from. */
export interface SiteRef {
  key: string;
  url: string;
}

/**
 * The site of a place: its website (`https://www.example.com/fr/` → key `example.com/fr`), else the domain
 * of its email, unless that is a mail provider's (`gmail.com` is nobody's website). Null when it has
 * neither, or the website is no http(s) address of a named host.
 */
export function siteOf(website: string | null, email: string | null): SiteRef | null {
  if (website) {
    let text = website.trim().split(/[\s;,|]+/)[0] ?? '';
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = `http://${text}`;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return null;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !registrableDomain(url.hostname)) return null;
    const host = url.hostname.replace(/\.$/, '').replace(/^www\./, '');
    const path = url.pathname.replace(/\/+$/, '');
    url.hash = '';
    return { key: `${host}${path}`, url: url.href };
  }
  const address = email ? normaliseEmail(email) : null;
  if (!address) return null;
  const domain = address.slice(address.indexOf('@') + 1);
  const registrable = registrableDomain(domain);
  if (!registrable || webmail.has(domain) || webmail.has(registrable)) return null;
  return { key: domain.replace(/^www\./, ''), url: `https://${domain}/` };
}
