import { getDomain } from 'tldts';
import { canonicalSocial, type SocialNetwork } from '../../contacts/socials.ts';
import { contactPageUrl } from './contact-page.ts';
import { CREDIT, emailsInLinkQuery, emailsInText, emailsInValue, normaliseEmail } from './emails.ts';
import { type PageScan, scanPage } from './page-scan.ts';
import { phoneFromMarkup, phonesInText } from './phones.ts';

/** A fetched page; `html` is already decoded to a string. */
export interface PageInput {
  url: string;
  html: string;
}
export interface FoundEmail {
  address: string;
  page: string;
  own_domain: boolean;
}
export interface FoundPhone {
  e164: string;
  raw: string;
  page: string;
}
export interface FoundSocial {
  network: SocialNetwork;
  url: string;
  page: string;
}
export interface ExtractedContacts {
  emails: FoundEmail[];
  phones: FoundPhone[];
  socials: FoundSocial[];
  contact_url: string | null;
}

/** How deep and how many JSON-LD values are walked: a page cannot make the walk unbounded. */
const JSON_LD_DEPTH = 12;
const JSON_LD_VALUES = 5_000;
/** More distinct profiles of one network than this on a site's pages make a list of other people's profiles. */
const PROFILES_PER_NETWORK = 3;

interface StructuredData {
  emails: string[];
  telephones: string[];
  sameAs: string[];
}

/** `email`, `telephone` and `sameAs` anywhere in the JSON-LD blocks (nested objects, `@graph`, arrays). */
function walkJsonLd(blocks: unknown[]): StructuredData {
  const data: StructuredData = { emails: [], telephones: [], sameAs: [] };
  let budget = JSON_LD_VALUES;
  const strings = (value: unknown): string[] =>
    typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  const walk = (value: unknown, depth: number): void => {
    if (depth > JSON_LD_DEPTH || budget-- <= 0 || value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1);
      return;
    }
    for (const [key, child] of Object.entries(value)) {
      const name = key.toLowerCase();
      if (name === 'email') data.emails.push(...strings(child));
      else if (name === 'telephone') data.telephones.push(...strings(child));
      else if (name === 'sameas') data.sameAs.push(...strings(child));
      else walk(child, depth + 1);
    }
  };
  for (const block of blocks) walk(block, 0);
  return data;
}

/**
 * The number of a WhatsApp chat link (`wa.me/4917…`, `api.whatsapp.com/send?phone=…`): always international,
 * and for many small businesses their mobile phone.
 */
function whatsAppNumber(href: string): string | null {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return null;
  }
  const host = url.hostname.toLowerCase().replace(/^www\./, '');
  // A `+` in the query reads as a space: the number is the digits either way.
  const written =
    host === 'wa.me'
      ? url.pathname.slice(1)
      : host === 'api.whatsapp.com' || host === 'whatsapp.com'
        ? (url.searchParams.get('phone') ?? '')
        : '';
  const digits = written.replace(/[\s+]/g, '');
  return /^\d{8,15}$/.test(digits) ? `+${digits}` : null;
}

class ContactCollector {
  private readonly emails = new Map<string, FoundEmail>();
  private readonly phones = new Map<string, FoundPhone>();
  private readonly socials = new Map<string, FoundSocial>();
  /** Profiles the page's structured data names as the business's own (`sameAs`). */
  private readonly declaredSocials = new Set<string>();
  /** Numbers some page labels as a fax: a fax is not a number a sales team can call. */
  private readonly faxes = new Set<string>();
  /** Numbers a page marks up or labels as a phone (`tel:`, JSON-LD, `Tel:`): a fax label elsewhere does not outweigh them. */
  private readonly phonesForSure = new Set<string>();

  /** Addresses a designer's or host's credit gives (`Site by …`): kept out even where they appear again. */
  private readonly credits = new Set<string>();

  constructor(private readonly site: string) {}

  email(address: string | null, page: string): void {
    if (!address) return;
    const key = address.toLowerCase();
    if (this.emails.has(key)) return;
    const domain = address.slice(address.lastIndexOf('@') + 1);
    this.emails.set(key, { address, page, own_domain: getDomain(domain) === this.site });
  }

  phone(e164: string | null, raw: string, page: string, sure: boolean): void {
    // E.164 allows 15 digits; the full metadata accepts some longer national numbers no one dials from a website.
    if (!e164 || e164.length > 16) return;
    if (sure) this.phonesForSure.add(e164);
    if (!this.phones.has(e164)) this.phones.set(e164, { e164, raw, page });
  }

  social(value: string, page: string, declared = false): void {
    const profile = canonicalSocial(value);
    if (!profile) return;
    if (declared) this.declaredSocials.add(profile.url);
    if (!this.socials.has(profile.url)) this.socials.set(profile.url, { ...profile, page });
  }

  /**
   * A business links one profile per network, rarely a few (branches, a founder); a page linking many of one
   * network is a list of others (partners, a directory, a blog roll). Beyond `PROFILES_PER_NETWORK`, only the
   * profiles the site declares its own (JSON-LD/microdata `sameAs`) or whose handle carries the site's name are kept.
   */
  private ownSocials(): FoundSocial[] {
    const all = [...this.socials.values()];
    const perNetwork = new Map<SocialNetwork, number>();
    for (const social of all) perNetwork.set(social.network, (perNetwork.get(social.network) ?? 0) + 1);
    const siteName = this.site.split('.')[0]!.replace(/[^a-z0-9]/g, '');
    return all.filter((social) => {
      if (perNetwork.get(social.network)! <= PROFILES_PER_NETWORK) return true;
      const handle = social.url
        .slice(social.url.lastIndexOf('/') + 1)
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '');
      return this.declaredSocials.has(social.url) || (siteName.length >= 4 && (handle.includes(siteName) || siteName.includes(handle)));
    });
  }

  private link(link: { href: string; text: string }, page: string, countryCode: string | null): void {
    if (/^mailto:/i.test(link.href)) {
      const addresses = emailsInValue(link.href);
      if (CREDIT.test(link.text)) for (const address of addresses) this.credits.add(address.toLowerCase());
      else for (const address of addresses) this.email(address, page);
      return;
    }
    if (/^(?:tel|callto):/i.test(link.href)) {
      const raw = link.href.slice(link.href.indexOf(':') + 1);
      this.phone(phoneFromMarkup(raw, countryCode), raw, page, true);
      return;
    }
    const whatsApp = whatsAppNumber(link.href);
    if (whatsApp) {
      this.phone(phoneFromMarkup(whatsApp, null), whatsApp, page, true);
      return;
    }
    this.social(link.href, page);
    for (const address of emailsInLinkQuery(link.href)) this.email(address, page);
  }

  collect(page: PageInput, scan: PageScan, countryCode: string | null): void {
    const structured = walkJsonLd(scan.jsonLd);
    for (const link of scan.links) this.link(link, page.url, countryCode);
    for (const address of scan.cloudflareEmails) this.email(normaliseEmail(address), page.url);
    for (const value of structured.emails) for (const address of emailsInValue(value)) this.email(address, page.url);
    for (const value of structured.telephones) this.phone(phoneFromMarkup(value, countryCode), value, page.url, true);
    for (const value of structured.sameAs) this.social(value, page.url, true);
    for (const { prop, value } of scan.microdata) {
      if (prop === 'email') for (const address of emailsInValue(value)) this.email(address, page.url);
      else if (prop === 'telephone') this.phone(phoneFromMarkup(value, countryCode), value, page.url, true);
      else if (prop === 'sameas') this.social(value, page.url, true);
    }
    for (const line of scan.text.split('\n')) {
      for (const address of emailsInText(line)) {
        // The credit must come before the address on its line (`Website by Pixelwerk, hallo@…`).
        const at = line.toLowerCase().indexOf(address.slice(0, address.indexOf('@') + 1).toLowerCase());
        if (CREDIT.test(at >= 0 ? line.slice(0, at) : line)) this.credits.add(address.toLowerCase());
        else this.email(address, page.url);
      }
    }
    for (const found of phonesInText(scan.text, countryCode)) {
      if (found.label === 'fax') this.faxes.add(found.e164);
      else this.phone(found.e164, found.raw, page.url, found.label === 'phone');
    }
  }

  result(contactUrl: string | null): ExtractedContacts {
    const emails = [...this.emails.values()].filter((e) => e.own_domain || !this.credits.has(e.address.toLowerCase()));
    return {
      // A stable sort: the site's own addresses first, each group in the order the pages showed them.
      emails: [...emails.filter((e) => e.own_domain), ...emails.filter((e) => !e.own_domain)],
      phones: [...this.phones.values()].filter((p) => this.phonesForSure.has(p.e164) || !this.faxes.has(p.e164)),
      socials: this.ownSocials(),
      contact_url: contactUrl,
    };
  }
}

/**
 * Emails, phone numbers, social profiles and the contact page of a site, from the pages the crawler fetched
 * (home page first). Sources: `mailto:`/`tel:` links, visible text (obfuscations undone), JSON-LD, microdata and
 * Cloudflare's email protection; junk is dropped (see `emails.ts`, `socials.ts`). Emails at the site's own
 * registrable domain come first.
 */
export function extractContacts(pages: PageInput[], context: { countryCode: string | null; siteDomain: string }): ExtractedContacts {
  const site = getDomain(context.siteDomain) ?? context.siteDomain.toLowerCase();
  const collector = new ContactCollector(site);
  const scans = pages.map((page) => ({ page, scan: scanPage(page.html) }));
  for (const { page, scan } of scans) collector.collect(page, scan, context.countryCode);
  return collector.result(contactPageUrl(scans, site));
}
