import { getDomain } from 'tldts';
import type { PageScan } from './page-scan.ts';

/**
 * Words that name a contact page, then words that name an imprint or legal notice (which in much of Europe
 * must carry the business's address, phone and email), in the languages of the sites we enrich.
 * Matched against the URL path and the anchor text or title, lower-cased and without accents.
 */
const CONTACT_WORDS = [
  'contact', 'kontakt', 'contacto', 'contato', 'contatti', 'contattaci', 'contactez', 'kontaktai', 'kontakty',
  'yhteystiedot', 'kapcsolat', 'iletisim', 'epikoinonia', 'επικοινωνια', 'контакты', 'お問い合わせ', 'お問合せ',
  '問い合わせ', '联系', '聯絡', '연락처', 'get in touch', 'reach us', 'find us',
];
const IMPRINT_WORDS = [
  'impressum', 'imprint', 'legal notice', 'legal-notice', 'mentions legales', 'mentions-legales', 'aviso legal',
  'aviso-legal', 'note legali', 'note-legali', 'colofon', 'kolofon', 'informacion legal', '特定商取引法',
];

function fold(text: string): string {
  return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[_+]/g, ' ');
}

/** 2 for a contact page, 1 for an imprint, 0 otherwise. */
function rank(...texts: string[]): number {
  const folded = texts.map(fold);
  if (folded.some((t) => CONTACT_WORDS.some((w) => t.includes(w)))) return 2;
  if (folded.some((t) => IMPRINT_WORDS.some((w) => t.includes(w)))) return 1;
  return 0;
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
