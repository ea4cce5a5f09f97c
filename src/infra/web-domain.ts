import { getDomain } from 'tldts';

/**
 * The registrable domain of a website or host (`https://www.shop.example.co.uk/x` → `example.co.uk`), by
 * the Public Suffix List (private suffixes included, so `someone.github.io` is a domain of its own);
 * scheme, `www.`, port, path and letter case do not matter, and international names are in their ASCII
 * (punycode) form, as a URL gives them. Null for what is no domain (an IP address, `localhost`, text).
 * A field listing several websites counts by its first.
 */
export function registrableDomain(website: string | null | undefined): string | null {
  if (!website) return null;
  let text = website.trim().split(/[\s;,|]+/)[0] ?? '';
  if (text === '') return null;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = `http://${text}`;
  let host: string;
  try {
    host = new URL(text).hostname;
  } catch {
    return null;
  }
  host = host.replace(/\.$/, '');
  if (host === '' || host.startsWith('[')) return null;
  return getDomain(host, { allowPrivateDomains: true, validateHostname: true }) ?? null;
}
