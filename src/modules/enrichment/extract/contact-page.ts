import { getDomain } from 'tldts';
import { contactKindOf } from '../crawler/page-links.ts';
import type { PageScan } from './page-scan.ts';

/**
 * 2 for a contact page, 1 for an imprint or legal notice (which in much of Europe must carry the business's
 * address, phone and email), 0 otherwise: by the crawler's keywords, in the taxonomy's languages.
 */
function rank(...texts: string[]): number {
  let best = 0;
  for (const text of texts) {
    const kind = contactKindOf(text);
    best = Math.max(best, kind === 'contact' ? 2 : kind === 'legal' ? 1 : 0);
  }
  return best;
}

function pathOf(url: URL): string {
  try {
    return decodeURIComponent(url.pathname);
  } catch {
    return url.pathname;
  }
}

function baseOf(pageUrl: string, baseHref: string | null): string {
  if (!baseHref) return pageUrl;
  try {
    return new URL(baseHref, pageUrl).href;
  } catch {
    return pageUrl;
  }
}

/**
 * The contact page: one of the pages given whose path or title names it a contact page (or else an imprint),
 * otherwise the best such link on the pages (home page first) at the site's own registrable domain.
 */
export function contactPageUrl(scans: Array<{ page: { url: string }; scan: PageScan }>, site: string): string | null {
  let best: { url: string; rank: number } | null = null;
  for (const { page, scan } of scans) {
    let url: URL;
    try {
      url = new URL(page.url);
    } catch {
      continue;
    }
    const score = rank(pathOf(url), scan.title);
    if (score > 0 && url.pathname !== '/' && (!best || score > best.rank)) best = { url: url.href, rank: score };
  }
  if (best) return best.url;
  for (const { page, scan } of scans) {
    const base = baseOf(page.url, scan.baseHref);
    for (const link of scan.links) {
      let url: URL;
      try {
        url = new URL(link.href, base);
      } catch {
        continue;
      }
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || getDomain(url.hostname) !== site || url.pathname === '/') continue;
      const score = rank(pathOf(url), link.text);
      if (score > 0 && (!best || score > best.rank)) best = { url: `${url.origin}${url.pathname}${url.search}`, rank: score };
    }
    if (best) return best.url;
  }
  return null;
}
