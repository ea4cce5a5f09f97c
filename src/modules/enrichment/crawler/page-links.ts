import { DomUtils, ElementType, parseDocument } from 'htmlparser2';
import { foldText } from '../../../infra/text.ts';
import { withinNesting } from '../extract/page-scan.ts';
import { type ContactPageKind, contactKeywords, contactPageWeights } from './contact-keywords.ts';

/** Depth past which a page's links are left unread (see `withinNesting`): far deeper than real pages nest. */
const LINK_NESTING = 1_000;

type AnyNode = Parameters<typeof DomUtils.getChildren>[0];
type Element = Parameters<typeof DomUtils.getAttributeValue>[0];

export interface ContactLink {
  url: string;
  kind: ContactPageKind;
  score: number;
}

/** What the crawler needs from a page: where its contact pages are, and whether it is more than a script loader. */
export interface PageAnalysis {
  /** Links to contact, legal, about and team pages within the site, best first. */
  contactLinks: ContactLink[];
  /** Characters of text a reader sees (outside scripts, styles, `<noscript>`, `<template>` and `<head>`), spaces collapsed. */
  visibleTextLength: number;
  scriptCount: number;
  /** `<a href>` that lead somewhere (not `#…`, not `javascript:`). */
  linkCount: number;
  /** Where `<meta http-equiv="refresh">` sends the reader, resolved; null when the page has none. */
  refreshUrl: string | null;
}

const hidden = new Set(['script', 'style', 'noscript', 'template', 'head', 'svg']);

/** Links to files a browser would download rather than show: never a contact page. */
const fileExtension =
  /\.(pdf|jpe?g|png|gif|webp|svg|ico|zip|rar|7z|docx?|xlsx?|pptx?|odt|mp[34]|mov|avi|webm|css|js|xml|json|txt|vcf|ics)$/i;

/** A link text longer than this is a sentence or a teaser, not the name of a page. */
const maxLinkTextLength = 80;

const folded = (Object.keys(contactKeywords) as ContactPageKind[]).flatMap((kind) =>
  contactKeywords[kind].map((word) => ({
    kind,
    word: foldText(word),
    unspaced: /[^\p{Script=Latin}\p{Script=Cyrillic}\p{Script=Greek}\s\d]/u.test(foldText(word)),
  })),
);

/** The best kind a piece of text names, by the keyword list: a word must start where the keyword starts (anywhere, for scripts written without spaces). */
export function contactKindOf(text: string): ContactPageKind | null {
  const subject = ` ${foldText(text)}`;
  if (subject.length === 1) return null;
  let best: ContactPageKind | null = null;
  for (const { kind, word, unspaced } of folded) {
    if (best && contactPageWeights[best] >= contactPageWeights[kind]) continue;
    if (unspaced ? subject.includes(word) : subject.includes(` ${word}`)) best = kind;
  }
  return best;
}

/**
 * Reads a page with htmlparser2 (a forgiving HTML parser, the markup of real sites is often broken) and
 * answers its contact links within `inScope` (the site's registrable domain), ranked: the kind's weight,
 * doubled when the link's words (text, title, aria-label) name it rather than only its URL path.
 */
export function analysePage(html: string, pageUrl: string, inScope: (url: URL) => boolean): PageAnalysis {
  // Cut where elements nest deeper than real pages do: htmlparser2's cost per tag grows with the depth, and the
  // walks below (domutils' findOne, textContent, `walk`) recurse once a level.
  const document = parseDocument(withinNesting(html, LINK_NESTING), { decodeEntities: true });
  const baseHref = DomUtils.findOne((e) => e.name === 'base' && DomUtils.hasAttrib(e, 'href'), document.children);
  const base = resolveUrl(baseHref ? (DomUtils.getAttributeValue(baseHref, 'href') ?? '') : '', pageUrl) ?? new URL(pageUrl);
  const pageKey = withoutHash(new URL(pageUrl));

  const found = new Map<string, ContactLink>();
  let linkCount = 0;
  for (const anchor of DomUtils.findAll((e) => e.name === 'a' || e.name === 'area', document.children)) {
    const href = DomUtils.getAttributeValue(anchor, 'href')?.trim();
    if (!href || href.startsWith('#') || /^javascript:/i.test(href)) continue;
    linkCount++;
    const target = resolveUrl(href, base.href);
    if (!target || (target.protocol !== 'http:' && target.protocol !== 'https:') || !inScope(target)) continue;
    const key = withoutHash(target);
    if (key === pageKey || fileExtension.test(target.pathname)) continue;
    const link = rankLink(anchor, target);
    if (!link) continue;
    const known = found.get(key);
    if (!known || known.score < link.score) found.set(key, { url: key, ...link });
  }
  // A stable sort keeps the page's order among equals: sites put their main contact link first.
  const contactLinks = [...found.values()].sort((a, b) => b.score - a.score);

  let textLength = 0;
  let scriptCount = 0;
  let refreshUrl: string | null = null;
  const walk = (nodes: AnyNode[], visible: boolean) => {
    for (const node of nodes) {
      if (node.type === ElementType.Text) {
        if (visible) textLength += (node as { data: string }).data.replace(/\s+/g, ' ').trim().length;
      } else if (node.type === ElementType.Script || node.type === ElementType.Style || node.type === ElementType.Tag) {
        const element = node as Element;
        if (element.name === 'script') scriptCount++;
        if (
          element.name === 'meta' &&
          refreshUrl === null &&
          DomUtils.getAttributeValue(element, 'http-equiv')?.toLowerCase() === 'refresh'
        ) {
          refreshUrl = refreshTarget(DomUtils.getAttributeValue(element, 'content') ?? '', base.href);
        }
        walk(element.children, visible && !hidden.has(element.name));
      } else if ('children' in node) walk((node as { children: AnyNode[] }).children, visible);
    }
  };
  walk(document.children, true);
  return { contactLinks, visibleTextLength: textLength, scriptCount, linkCount, refreshUrl };
}

function rankLink(anchor: Element, target: URL): { kind: ContactPageKind; score: number } | null {
  const words = [
    DomUtils.textContent(anchor),
    DomUtils.getAttributeValue(anchor, 'title') ?? '',
    DomUtils.getAttributeValue(anchor, 'aria-label') ?? '',
  ]
    .map((w) => w.replace(/\s+/g, ' ').trim())
    .filter((w) => w.length > 0 && w.length <= maxLinkTextLength)
    .join(' | ');
  const byWords = contactKindOf(words);
  let path = target.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // A malformed escape: the raw path still names the page well enough.
  }
  const byPath = contactKindOf(path.replace(/\.[a-z0-9]{2,5}$/i, ''));
  const wordScore = byWords ? contactPageWeights[byWords] * 2 : 0;
  const pathScore = byPath ? contactPageWeights[byPath] : 0;
  if (wordScore === 0 && pathScore === 0) return null;
  return wordScore >= pathScore ? { kind: byWords!, score: wordScore } : { kind: byPath!, score: pathScore };
}

/** `<meta http-equiv="refresh" content="0; url=/de/">`: the URL part of the attribute, resolved against the page. */
function refreshTarget(content: string, base: string): string | null {
  const match = /^\s*\d+(?:\.\d*)?\s*[;,]\s*(?:url\s*=\s*)?(['"]?)(.+?)\1\s*$/i.exec(content);
  if (!match?.[2]) return null;
  return resolveUrl(match[2].trim(), base)?.href ?? null;
}

function resolveUrl(href: string, base: string): URL | null {
  try {
    return new URL(href, base);
  } catch {
    return null;
  }
}

function withoutHash(url: URL): string {
  const copy = new URL(url.href);
  copy.hash = '';
  return copy.href;
}
