import { createRequire } from 'node:module';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { getDomain } from 'tldts';
import { registrableDomain } from '../../infra/web-domain.ts';
import { EMAIL, webmail } from './normal-forms.ts';
import { isRoleLocalPart } from './role-addresses.ts';
import type { PhoneType } from './trust.types.ts';

/**
 * The evidence a value carries by itself, without asking anyone: what its text says (an email's syntax, role,
 * provider; a phone's validity, type and forms in the place's country). What DNS and HTTP say comes from the
 * checks (`email_domains`, `enrich_sites`), and both are put together by `contacts/trust.ts`.
 */

const requireHere = createRequire(import.meta.url);
const mailchecker = requireHere('mailchecker') as { blacklist(): Iterable<string> };
const disposableDomains: ReadonlySet<string> = new Set(mailchecker.blacklist());

export interface EmailFacts {
  /** The address's syntax is one mail can be sent to. */
  syntax: boolean;
  /** Its domain, lower-cased (null when there is no `@`). */
  domain: string | null;
  role: boolean;
  disposable: boolean;
  free_provider: boolean;
  own_domain: boolean;
}

/** What an address says by itself, and whether its registrable domain is that of the place's website. */
export function emailFacts(address: string, website: string | null): EmailFacts {
  const at = address.lastIndexOf('@');
  const domain = at > 0 ? address.slice(at + 1).toLowerCase() : null;
  const local = at > 0 ? address.slice(0, at) : address;
  const registrable = domain ? (getDomain(domain, { allowPrivateDomains: true }) ?? domain) : null;
  const listed = (set: ReadonlySet<string>) => domain !== null && (set.has(domain) || (registrable !== null && set.has(registrable)));
  const site = registrableDomain(website);
  return {
    syntax: EMAIL.test(address),
    domain,
    role: isRoleLocalPart(local),
    disposable: listed(disposableDomains),
    free_provider: listed(webmail),
    own_domain: site !== null && registrable === site,
  };
}

export interface PhoneFacts {
  valid: boolean;
  type: PhoneType;
  /** `+49 89 219989 0` as libphonenumber spaces it; null for a number it cannot parse. */
  international: string | null;
  /** The national form (`089 2199890`). */
  national: string | null;
  /** The number's own country (ISO 3166-1), which may differ from the place's. */
  country: string | null;
}

const typeOf: Record<string, PhoneType> = {
  MOBILE: 'mobile',
  FIXED_LINE: 'fixed_line',
  TOLL_FREE: 'toll_free',
  PREMIUM_RATE: 'premium_rate',
  VOIP: 'voip',
};

/**
 * A number's validity, type and display forms by libphonenumber's full metadata. A number its metadata
 * cannot tell apart (`FIXED_LINE_OR_MOBILE` in the United States and Canada, shared-cost, personal, pager,
 * UAN) is `unknown`: a guess either way would mislead a filter on mobiles.
 */
export function phoneFacts(value: string, countryCode: string | null): PhoneFacts {
  const parsed = value.startsWith('+')
    ? parsePhoneNumberFromString(value)
    : parsePhoneNumberFromString(value, countryCode ? { defaultCountry: countryCode as never } : {});
  if (!parsed) return { valid: false, type: 'unknown', international: null, national: null, country: null };
  const valid = parsed.isValid();
  const type = valid ? (typeOf[parsed.getType() ?? ''] ?? 'unknown') : 'unknown';
  return {
    valid,
    type,
    international: parsed.formatInternational(),
    national: parsed.formatNational(),
    country: parsed.country ?? null,
  };
}

/** The international display form of an E.164 number (`+49 89 2199890`), or null when it is no valid number. */
export function internationalPhone(e164: string | null): string | null {
  if (!e164) return null;
  const parsed = parsePhoneNumberFromString(e164);
  return parsed?.isValid() ? parsed.formatInternational() : null;
}
