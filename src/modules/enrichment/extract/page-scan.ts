import type { AnyNode, Element } from 'domhandler';
import { parseDocument, Tokenizer, type TokenizerCallbacks } from 'htmlparser2';

/** What one walk over a parsed page collects for the extractors. */
export interface PageScan {
  /** Visible text, one line per block element or `<br>`, with entities decoded by the parser. */
  text: string;
  /** Every `<a>`/`<area>` link with its anchor text, in document order. */
  links: Array<{ href: string; text: string }>;
  /** Addresses decoded from Cloudflare's `data-cfemail` attributes and `/cdn-cgi/l/email-protection#…` links. */
  cloudflareEmails: string[];
  /** Parsed JSON-LD blocks (malformed ones are skipped). */
  jsonLd: unknown[];
  /** `itemprop` values: the `content` or `href` attribute, else the element's text. */
  microdata: Array<{ prop: string; value: string }>;
  title: string;
  /** The page's `<base href>`, against which its relative links resolve. */
  baseHref: string | null;
}

/** Elements whose content a visitor never reads as text (scripts, styles, templates, form fields' defaults). */
const INVISIBLE = new Set(['script', 'style', 'noembed', 'template', 'head', 'svg', 'math', 'textarea', 'select', 'iframe', 'object']);

/** Elements that start a new line of text, so that the text of neighbouring cells and blocks never runs together. */
const BLOCK = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'br',
  'dd',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'ul',
  'option',
  'button',
  'label',
  'center',
  'caption',
  'html',
]);

/**
 * Cloudflare's email obfuscation: the first byte is a key XORed into every following byte of the UTF-8 address.
 * Null when the hex is malformed.
 */
export function decodeCloudflareEmail(hex: string): string | null {
  if (!/^[0-9a-f]{4,}$/i.test(hex) || hex.length % 2 !== 0) return null;
  const key = Number.parseInt(hex.slice(0, 2), 16);
  const bytes = Buffer.alloc(hex.length / 2 - 1);
  for (let i = 2; i < hex.length; i += 2) bytes[i / 2 - 1] = Number.parseInt(hex.slice(i, i + 2), 16) ^ key;
  return bytes.toString('utf8');
}

function attr(element: Element, name: string): string | undefined {
  return element.attribs[name];
}

/** How many nodes the text of one element (a link, a title, a microdata value) is read from. */
const TEXT_OF_NODES = 1_000;

/** The text under a node, without scripts and styles, read from its first `TEXT_OF_NODES` nodes. */
function textOf(node: AnyNode): string {
  const out: string[] = [];
  const stack: AnyNode[] = [node];
  for (let budget = TEXT_OF_NODES; stack.length > 0 && budget > 0; budget--) {
    const next = stack.pop()!;
    if (next.type === 'text') out.push(next.data);
    else if ('children' in next && next.type !== 'script' && next.type !== 'style') {
      for (let i = next.children.length - 1; i >= 0; i--) stack.push(next.children[i]!);
    }
  }
  return out.join('');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * How deep elements may nest before the rest of a page is left unread. htmlparser2 keeps its open elements
 * in an array it shifts and unshifts, so each tag costs the depth and a page of 100,000 unclosed `<b>` takes
 * minutes; real pages stay far below this even with unclosed `<font>` soup.
 */
const MAX_NESTING = 5_000;
/** Elements without content: they never deepen a page. */
const VOID = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'source',
  'track',
  'wbr',
  'param',
  'keygen',
]);

/**
 * The page up to the first tag that would nest elements deeper than `MAX_NESTING`, found with htmlparser2's
 * own tokenizer (linear, and it knows comments, scripts and attribute quoting). Open tags minus close tags
 * overcounts where the parser closes an element by itself (`<p>`, `<li>`, `<td>` left open), so the parser's
 * own depth, and with it its cost per tag, stays below the limit.
 */
export function withinNesting(html: string, maxNesting = MAX_NESTING): string {
  let depth = 0;
  let tagStart = 0;
  let name = '';
  let cut = -1;
  const ignore = () => {};
  const callbacks: TokenizerCallbacks = {
    onattribdata: ignore,
    onattribentity: ignore,
    onattribend: ignore,
    onattribname: ignore,
    oncdata: ignore,
    oncomment: ignore,
    ondeclaration: ignore,
    onend: ignore,
    onprocessinginstruction: ignore,
    ontext: ignore,
    ontextentity: ignore,
    onselfclosingtag: ignore,
    onopentagname(start, end) {
      tagStart = start - 1;
      name = html.slice(start, end).toLowerCase();
    },
    onopentagend() {
      if (VOID.has(name)) return;
      depth++;
      if (depth > maxNesting && cut < 0) cut = tagStart;
    },
    onclosetag(start, end) {
      if (!VOID.has(html.slice(start, end).toLowerCase()) && depth > 0) depth--;
    },
  };
  const tokenizer = new Tokenizer({ decodeEntities: false }, callbacks);
  tokenizer.write(html);
  tokenizer.end();
  return cut < 0 ? html : html.slice(0, cut);
}

const CLOUDFLARE_LINK = /\/cdn-cgi\/l\/email-protection#([0-9a-f]+)$/i;

export function scanPage(html: string): PageScan {
  const document = parseDocument(withinNesting(html), { decodeEntities: true });
  const parts: string[] = [];
  const scan: PageScan = { text: '', links: [], cloudflareEmails: [], jsonLd: [], microdata: [], title: '', baseHref: null };

  const collectAttributes = (element: Element, name: string): void => {
    const cfemail = attr(element, 'data-cfemail');
    if (cfemail) {
      const decoded = decodeCloudflareEmail(cfemail);
      if (decoded) scan.cloudflareEmails.push(decoded);
    }
    const href = attr(element, 'href');
    if (href && (name === 'a' || name === 'area')) {
      const cloudflare = CLOUDFLARE_LINK.exec(href.trim());
      const decoded = cloudflare ? decodeCloudflareEmail(cloudflare[1]!) : null;
      if (decoded) scan.cloudflareEmails.push(decoded);
      else scan.links.push({ href: href.trim(), text: textOf(element).replace(/\s+/g, ' ').trim() });
    }
    const itemprop = attr(element, 'itemprop');
    if (itemprop) {
      const value = attr(element, 'content') ?? href ?? textOf(element);
      for (const prop of itemprop.toLowerCase().split(/\s+/)) if (prop) scan.microdata.push({ prop, value: value.trim() });
    }
  };

  // An explicit stack rather than recursion: a page of 50,000 nested elements must not exhaust the call stack.
  // A string on the stack is a separator to write once the element's children are done.
  const stack: Array<{ node: AnyNode; inHead: boolean } | string> = [{ node: document as unknown as AnyNode, inHead: false }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    if (typeof step === 'string') {
      parts.push(step);
      continue;
    }
    const { node, inHead } = step;
    if (node.type === 'text') {
      if (!inHead) parts.push(node.data);
      continue;
    }
    if (node.type === 'script') {
      const element = node as Element;
      if ((attr(element, 'type') ?? '').trim().toLowerCase() === 'application/ld+json') {
        const value = parseJson(element.children.map((c) => (c.type === 'text' ? c.data : '')).join(''));
        if (value !== undefined) scan.jsonLd.push(value);
      }
      continue;
    }
    if (node.type !== 'tag' && node.type !== 'root') continue;
    const element = node as Element;
    const name = node.type === 'tag' ? element.name.toLowerCase() : '';
    if (name === 'title' && !scan.title) scan.title = textOf(element).trim();
    if (name === 'base' && scan.baseHref === null && attr(element, 'href')) scan.baseHref = attr(element, 'href')!.trim();
    // The head holds no visible text but may hold microdata (`<meta itemprop>`), JSON-LD and `<base href>`.
    const head = inHead || name === 'head';
    if (!head && (INVISIBLE.has(name) || (name !== '' && attr(element, 'hidden') !== undefined))) continue;
    if (name !== '') collectAttributes(element, name);
    // Blocks end a line; inline elements are set apart by a space, since stylesheets often show a label and its
    // value (`<span>E-Mail</span><span>info@…</span>`) apart although the markup runs them together.
    const separator = head || name === '' ? '' : BLOCK.has(name) ? '\n' : ' ';
    parts.push(separator);
    stack.push(separator);
    for (let i = element.children.length - 1; i >= 0; i--) stack.push({ node: element.children[i]!, inHead: head });
  }

  scan.text = parts
    .join('')
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0\u200b]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
  return scan;
}
