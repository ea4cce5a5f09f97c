import { Parser } from 'htmlparser2';
import iconv from 'iconv-lite';
import { detectEncoding } from '../../importers/readers/text-source.ts';

/** How far into a page the `<meta charset>` prescan looks (the HTML standard's 1024 bytes, with room for long heads). */
const prescanBytes = 4096;

/**
 * Decodes a page's bytes the way a browser picks the encoding: a byte-order mark, then the Content-Type
 * header's `charset`, then `<meta charset>` or `<meta http-equiv="Content-Type">` near the top of the page,
 * then detection on the bytes (valid UTF-8 is UTF-8, otherwise chardet, as the importers detect files).
 * Labels are read as the WHATWG Encoding Standard reads them (TextDecoder: `iso-8859-1` and `ascii` are
 * windows-1252, `gb2312` is GBK, `sjis` is Shift_JIS…); a label TextDecoder does not know goes to iconv-lite.
 */
export function decodeHtml(body: Buffer, contentType: string | undefined): { html: string; encoding: string } {
  const bom = bomEncoding(body);
  const candidates = bom ? [bom] : [charsetOfContentType(contentType), prescanMetaCharset(body)];
  for (const label of candidates) {
    if (!label) continue;
    const decoded = decodeWith(label, body);
    if (decoded) return decoded;
  }
  return (
    decodeWith(detectEncoding(body.subarray(0, 1 << 16)), body) ?? { html: iconv.decode(body, 'windows-1252'), encoding: 'windows-1252' }
  );
}

function bomEncoding(body: Buffer): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  return null;
}

/** `text/html; charset="Shift_JIS"` → `Shift_JIS`. */
export function charsetOfContentType(contentType: string | undefined): string | null {
  if (!contentType) return null;
  for (const parameter of contentType.split(';').slice(1)) {
    const [name, ...value] = parameter.split('=');
    if (name?.trim().toLowerCase() === 'charset')
      return (
        value
          .join('=')
          .trim()
          .replace(/^["']|["']$/g, '') || null
      );
  }
  return null;
}

/** The charset a `<meta>` near the top declares, found by the HTML parser over the first bytes read as Latin-1 (the labels are ASCII). */
function prescanMetaCharset(body: Buffer): string | null {
  let found: string | null = null;
  const parser = new Parser({
    onopentag(name, attributes) {
      if (found || name !== 'meta') return;
      if (attributes.charset) found = attributes.charset.trim();
      else if (attributes['http-equiv']?.toLowerCase() === 'content-type') found = charsetOfContentType(attributes.content);
    },
  });
  parser.write(body.subarray(0, prescanBytes).toString('latin1'));
  parser.end();
  // A page that says it is UTF-16 in ASCII bytes is not UTF-16: the standard reads that label as UTF-8.
  if (found && /^utf-?16/i.test(found)) return 'utf-8';
  return found;
}

function decodeWith(label: string, body: Buffer): { html: string; encoding: string } | null {
  try {
    const decoder = new TextDecoder(label.trim().toLowerCase());
    // Node 20's TextDecoder decodes windows-1252 in a single call as ISO-8859-1 (0x80 stays U+0080, not €; streaming decodes are right): iconv-lite has the right table.
    if (decoder.encoding === 'windows-1252') return { html: iconv.decode(body, 'windows-1252'), encoding: 'windows-1252' };
    return { html: decoder.decode(body), encoding: decoder.encoding };
  } catch {
    if (!iconv.encodingExists(label)) return null;
    return { html: iconv.decode(body, label), encoding: label.toLowerCase() };
  }
}
