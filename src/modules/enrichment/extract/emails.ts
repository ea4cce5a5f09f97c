import { parse as parseDomain } from 'tldts';

/**
 * Domains that are reserved for documentation (RFC 2606, RFC 6761) or that forms and templates use as
 * placeholders: an address there is never a business's.
 */
const PLACEHOLDER_DOMAINS = new Set([
  'example.com',
  'example.org',
  'example.net',
  'example.edu',
  'domain.com',
  'domain.tld',
  'yourdomain.com',
  'yoursite.com',
  'yourcompany.com',
  'mydomain.com',
  'mysite.com',
  'mycompany.com',
  'company.com',
  'website.com',
  'yourwebsite.com',
  'sitename.com',
  'test.com',
  'email.tld',
  'address.com',
  'mail.tld',
  'host.com',
  'server.com',
]);
const RESERVED_SUFFIXES = ['example', 'test', 'invalid', 'localhost', 'local', 'internal', 'lan', 'home.arpa'];

/**
 * Registrable domains of platforms whose addresses turn up on customers' pages without being the business's:
 * site builders and hosts (in templates, DSNs and credits), error trackers and monitoring (DSN keys), font
 * and icon services (licence notices copied into pages), form and newsletter services. Subdomains count
 * (`sentry-next.wixpress.com`).
 */
const PLATFORM_DOMAINS = new Set([
  'sentry.io',
  'wixpress.com',
  'wix.com',
  'squarespace.com',
  'sqsp.net',
  'godaddy.com',
  'secureserver.net',
  'wordpress.com',
  'wordpress.org',
  'wpengine.com',
  'shopify.com',
  'myshopify.com',
  'weebly.com',
  'jimdo.com',
  'strikingly.com',
  'webflow.io',
  'webflow.com',
  'duda.co',
  'site123.com',
  'yola.com',
  'bugsnag.com',
  'rollbar.com',
  'raygun.io',
  'trackjs.com',
  'newrelic.com',
  'nr-data.net',
  'datadoghq.com',
  'logrocket.com',
  'w3.org',
  'schema.org',
  'typekit.com',
  'fontawesome.com',
  'cloudflare.com',
  'googlegroups.com',
  'mailchimp.com',
  'list-manage.com',
  'hubspot.com',
  'wufoo.com',
  'jotform.com',
]);

/** Mailbox names that only ever stand for "put your own address here". */
const PLACEHOLDER_LOCALS = new Set([
  'yourname',
  'your.name',
  'your_name',
  'your-name',
  'youremail',
  'your.email',
  'your_email',
  'your-email',
  'yourmail',
  'firstname.lastname',
  'first.last',
  'firstname',
  'lastname',
  'john.doe',
  'jane.doe',
  'johndoe',
  'janedoe',
  'john.smith',
  'username',
  'someone',
  'somebody',
  'xxx',
  'xxxx',
  'xxxxx',
  'you',
  'abc',
  'emailaddress',
  'email.address',
  'nobody',
  'noreply',
  'no-reply',
  'donotreply',
  'do-not-reply',
  'mailer-daemon',
  'postmaster',
]);
/** Mailbox names that are placeholders at a free-mail or generic domain (`your@email.com`, `name@gmail.com`). */
const WEAK_PLACEHOLDER_LOCALS = new Set(['your', 'name', 'email', 'user', 'test', 'me', 'mail', 'example', 'sample', 'info', 'address']);
const GENERIC_DOMAINS = new Set(['email.com', 'mail.com', 'gmail.com', 'yahoo.com', 'hotmail.com', 'outlook.com', 'aol.com', 'icloud.com']);

/** File extensions that make `logo@2x.png` look like an address (several of them are TLDs too). */
const ASSET_EXTENSIONS = new Set([
  'png',
  'jpg',
  'jpeg',
  'gif',
  'svg',
  'webp',
  'bmp',
  'ico',
  'tif',
  'tiff',
  'avif',
  'heic',
  'css',
  'js',
  'mjs',
  'json',
  'map',
  'mp4',
  'mov',
  'webm',
  'mp3',
  'zip',
  'pdf',
  'woff',
  'woff2',
  'ttf',
  'eot',
  'otf',
  'php',
  'html',
  'htm',
  'xml',
]);

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^(?!-)[\p{L}\p{N}-]{1,63}(?<!-)$/u;

/**
 * The mailbox and lower-cased domain of an address whose syntax is that of a deliverable address (RFC 5321's
 * dot-atom mailbox, a domain of letter-digit-hyphen labels under a known top-level domain); null otherwise.
 */
export function emailSyntax(raw: string): { local: string; domain: string; registrable: string } | null {
  const address = raw
    .trim()
    .replace(/^mailto:/i, '')
    .replace(/^[<("'[]+|[>)"'\].,;:]+$/g, '');
  const at = address.lastIndexOf('@');
  if (at <= 0 || at !== address.indexOf('@')) return null;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1).toLowerCase();
  if (local.length > 64 || domain.length > 253 || !LOCAL.test(local)) return null;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1)!)) return null;
  const parsed = parseDomain(domain, { allowPrivateDomains: false });
  if (!parsed.domain || !parsed.isIcann || parsed.domain === parsed.publicSuffix) return null;
  return { local, domain, registrable: parsed.domain };
}

/**
 * The address in normal form (domain lower-cased, mailbox as written) when it is a plausible business
 * address; null for bad syntax, unknown or reserved top-level domains, asset file names, platform and
 * placeholder addresses, and machine-made mailboxes (error trackers' hex keys).
 */
export function normaliseEmail(raw: string): string | null {
  const syntax = emailSyntax(raw);
  if (!syntax) return null;
  const { local, domain, registrable } = syntax;
  const labels = domain.split('.');
  if (ASSET_EXTENSIONS.has(labels.at(-1)!)) return null;
  // `logo@2x.png`, `icon@3x`: a retina suffix before the @ of an image name.
  if (/^\d+(\.\d+)?x$/i.test(labels[0]!)) return null;
  if (RESERVED_SUFFIXES.some((s) => domain === s || domain.endsWith(`.${s}`))) return null;
  if (PLACEHOLDER_DOMAINS.has(domain) || PLACEHOLDER_DOMAINS.has(registrable) || registrable.startsWith('example.')) return null;
  if (PLATFORM_DOMAINS.has(domain) || PLATFORM_DOMAINS.has(registrable)) return null;
  const lowerLocal = local.toLowerCase();
  if (PLACEHOLDER_LOCALS.has(lowerLocal)) return null;
  if (WEAK_PLACEHOLDER_LOCALS.has(lowerLocal) && GENERIC_DOMAINS.has(domain)) return null;
  // Error trackers' DSN keys and message ids: long runs of hex or digits are not mailboxes people read.
  if (/^[0-9a-f]{16,}$/i.test(local) || /^[0-9a-f-]{32,36}$/i.test(local) || /^\d{9,}$/.test(local)) return null;
  return `${local}@${domain}`;
}

/** Words that, put before " at ", make a sentence (`find us at … dot com`) rather than a mailbox. */
const SENTENCE_WORDS = new Set([
  'us',
  'me',
  'you',
  'him',
  'her',
  'them',
  'it',
  'we',
  'located',
  'based',
  'available',
  'online',
  'visit',
  'find',
  'reach',
  'found',
  'click',
  'here',
  'there',
  'is',
  'are',
  'and',
  'or',
  'was',
  'be',
  'look',
  'see',
  'stop',
  'arrive',
]);

const AT_BRACKETED = /\s*[[({<]\s*(?:at|@|arroba|chez|ät)\s*[\])}>]\s*/gi;
const DOT_BRACKETED = /\s*[[({<]\s*(?:dot|punkt|point|punto|ponto|\.)\s*[\])}>]\s*/gi;
/** `info at example dot com`: the spelled-out form needs at least one " dot " so that ordinary sentences with "at" stay sentences. */
const SPELLED =
  /(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)\s+(?:at|AT|At)\s+([A-Za-z0-9-]+(?:\s*\.\s*[A-Za-z0-9-]+)*(?:\s+(?:dot|DOT|Dot|punkt|PUNKT|Punkt)\s+[A-Za-z0-9-]+)+)(?![\w@])/g;
/** `info @ example.com`: spaces around the @ that some sites add to fool harvesters. */
const SPACED_AT = /(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)\s+@\s*|(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)\s*@\s+/g;
const ADDRESS = /(?<![\p{L}\p{N}._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;

/** Undoes the usual spelled-out and bracketed obfuscations (`info [at] example [dot] com`, `info(at)example.com`). */
export function deobfuscate(text: string): string {
  return text
    .replace(AT_BRACKETED, '@')
    .replace(DOT_BRACKETED, '.')
    .replace(SPELLED, (whole, local: string, domain: string) =>
      SENTENCE_WORDS.has(local.toLowerCase())
        ? whole
        : `${local}@${domain.replace(/\s+(?:dot|punkt)\s+/gi, '.').replace(/\s*\.\s*/g, '.')}`,
    )
    .replace(SPACED_AT, (whole, before: string | undefined, after: string | undefined) => {
      const local = before ?? after!;
      return SENTENCE_WORDS.has(local.toLowerCase()) ? whole : `${local}@`;
    });
}

/**
 * Candidate addresses in visible text, obfuscations undone. Inline elements run together in text
 * (`info@example.com<span>Tel</span>`), so a top-level domain that is not one is cut where a lower-case
 * letter meets an upper-case one.
 */
export function emailsInText(text: string): string[] {
  const found: string[] = [];
  for (const match of deobfuscate(text).matchAll(ADDRESS)) {
    const candidate = match[0].replace(/[.-]+$/, '');
    const normal = normaliseEmail(candidate);
    if (normal) {
      found.push(normal);
      continue;
    }
    const glued = /^(.*\.[a-z]{2,})[A-Z]/.exec(candidate);
    const trimmed = glued ? normaliseEmail(glued[1]!) : null;
    if (trimmed) found.push(trimmed);
  }
  return found;
}

/**
 * The addresses of a `mailto:` link or of an `email` field of structured data (several may be separated by
 * commas, obfuscated as in text; a link's query is dropped).
 */
export function emailsInValue(href: string): string[] {
  const body = href.replace(/^mailto:/i, '').split('?')[0]!;
  let decoded = body;
  try {
    decoded = decodeURIComponent(body);
  } catch {
    // A stray `%` in a hand-written link: the raw text is the best reading.
  }
  return deobfuscate(decoded)
    .split(/[,;]/)
    .map((part) => normaliseEmail(part))
    .filter((address): address is string => address !== null);
}

/**
 * Words of a web designer's or host's credit (`Site by`, `Webdesign von`, `Réalisé par`, `Diseño web por`,
 * `Realizzato da`, `Desenvolvido por`, `Gemaakt door`): the address there is theirs, not the business's.
 */
export const CREDIT = new RegExp(
  [
    String.raw`\b(?:(?:web)?site|design(?:ed)?|developed|powered|built|created|hosted|made|maintained)\s+(?:design\s+)?by\b`,
    String.raw`\bweb\s*design(?:er)?\b`,
    String.raw`\b(?:realisiert|umgesetzt|erstellt|gestaltet|programmiert|entwickelt)\s+(?:von|durch)\b`,
    String.raw`(?:r[ée]alis[ée]|con[çc]u|d[ée]velopp[ée]|cr[ée]{2})\s+par\b`,
    String.raw`\b(?:dise[ñn]o|dise[ñn]ado|desarrollado|desenvolvido|realizado|criado|hecho)\s+(?:web\s+)?por\b`,
    String.raw`\b(?:realizzato|sviluppato|progettato)\s+da\b`,
    String.raw`\b(?:ontwikkeld|gemaakt|ontworpen)\s+door\b`,
  ].join('|'),
  'i',
);

/** Parameters of ordinary links that carry the business's own address (payment buttons, newsletter forms). */
const ADDRESS_PARAMETERS = new Set(['business', 'email', 'receiver_email', 'recipient', 'to', 'mail']);

/** Addresses carried in the query of a link (`paypal.com/…?business=shop@example.org`). */
export function emailsInLinkQuery(href: string): string[] {
  const query = href.indexOf('?');
  if (query < 0 || !href.includes('@')) return [];
  const found: string[] = [];
  for (const [key, value] of new URLSearchParams(href.slice(query + 1).split('#')[0])) {
    if (!ADDRESS_PARAMETERS.has(key.toLowerCase())) continue;
    const address = normaliseEmail(value);
    if (address) found.push(address);
  }
  return found;
}
