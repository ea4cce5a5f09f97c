import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { pipeline, type Readable, Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import chardet from 'chardet';
import iconv from 'iconv-lite';
import { AppError } from '../../../infra/errors.ts';

/** A text file opened for streaming: decompressed when gzip, decoded to strings. */
export interface TextSource {
  /** The encoding used: the one given, or the detected one (`utf-8`, `windows-1252`, …). */
  readonly encoding: string;
  readonly totalBytes: number;
  /** Bytes read from the file on disk (compressed bytes for gzip). */
  bytesRead(): number;
  /** The first decompressed bytes (up to 1 MiB) that detection looked at. */
  readonly sample: Buffer;
  /** Decoded text. Pipe it onward with `stream.pipeline` so errors and backpressure propagate. */
  readonly text: Readable;
}

/** How much decompressed text encoding detection looks at. */
const sampleBytes = 1 << 20;

/** How much of the sample, from just before its first non-ASCII byte, chardet looks at. */
const chardetWindow = 1 << 16;

const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/** Opens the file as a stream of bytes, gunzipped when it starts with the gzip magic bytes. */
function openBytes(path: string, magic: Buffer, onRead: (n: number) => void): Readable {
  const counted = pipeline(
    createReadStream(path),
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        onRead(chunk.length);
        done(null, chunk);
      },
    }),
    () => {},
  );
  return isGzip(magic) ? pipeline(counted, createGunzip(), () => {}) : counted;
}

async function readMagic(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await handle.read(buf, 0, 2, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

async function readSample(path: string, magic: Buffer): Promise<Buffer> {
  const bytes = openBytes(path, magic, () => {});
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of bytes) {
      parts.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= sampleBytes) break;
    }
  } catch {
    // A corrupt gzip stream: the sample is what could be read; the import itself reports the error.
  } finally {
    bytes.destroy();
  }
  return Buffer.concat(parts).subarray(0, sampleBytes);
}

/** True when the bytes are valid UTF-8, allowing a sequence cut off at the end of the sample. */
function isUtf8(sample: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * Picks the encoding of a text sample. A byte-order mark wins; text that is valid UTF-8 is UTF-8 (chardet
 * calls pure ASCII `ISO-8859-1`); otherwise chardet's guess, with ISO-8859-1 read as windows-1252.
 */
export function detectEncoding(sample: Buffer): string {
  if (sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf) return 'utf-8';
  if (sample[0] === 0xff && sample[1] === 0xfe) return 'utf-16le';
  if (sample[0] === 0xfe && sample[1] === 0xff) return 'utf-16be';
  if (isUtf8(sample)) return 'utf-8';
  // chardet needs the non-ASCII bytes, not a megabyte of ASCII around them (it is slow on large inputs).
  const firstHigh = sample.findIndex((b) => b >= 0x80);
  const start = Math.max(0, firstHigh - 1024);
  const guess = chardet.detect(sample.subarray(start, start + chardetWindow))?.toLowerCase();
  if (!guess || guess === 'utf-8' || guess === 'iso-8859-1' || guess === 'windows-1252' || !iconv.encodingExists(guess))
    return 'windows-1252';
  return guess;
}

const windows1252 = new Set(['windows-1252', 'windows1252', 'cp1252', 'win1252']);

interface TextDecoderLike {
  write(bytes: Buffer): string;
  end(): string | undefined;
}

/**
 * windows-1252 is decoded with the WHATWG table (TextDecoder), which maps the five bytes the code page
 * leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) to the C1 characters ISO-8859-1 gives them; iconv-lite
 * would turn them into U+FFFD and lose them. Every other encoding is decoded by iconv-lite.
 */
function decoderFor(encoding: string): TextDecoderLike {
  if (windows1252.has(encoding.toLowerCase())) {
    const d = new TextDecoder('windows-1252');
    return { write: (b) => d.decode(b, { stream: true }), end: () => d.decode() };
  }
  return iconv.getDecoder(encoding, { stripBOM: true });
}

function decodeStream(encoding: string): Transform {
  const decoder = decoderFor(encoding);
  return new Transform({
    readableObjectMode: false,
    decodeStrings: true,
    transform(chunk: Buffer, _enc, done) {
      const s = decoder.write(chunk);
      done(null, s || undefined);
    },
    flush(done) {
      const s = decoder.end();
      done(null, s || undefined);
    },
  });
}

/** Rejects an encoding name neither decoder knows, naming the option and some accepted values. */
export function checkEncoding(encoding: string): string {
  if (windows1252.has(encoding.toLowerCase()) || iconv.encodingExists(encoding)) return encoding;
  throw new AppError('validation_failed', `unknown text encoding ${encoding}`, {
    errors: [
      {
        field: 'encoding',
        message: 'not a known encoding',
        allowed: ['utf-8', 'latin1', 'windows-1252', 'utf-16le', 'iso-8859-15', 'macintosh', '…any iconv-lite encoding'],
      },
    ],
  });
}

/** Opens a (possibly gzipped) text file, detecting its encoding unless one is given. */
export async function openTextSource(path: string, encoding?: string): Promise<TextSource> {
  const totalBytes = (await stat(path)).size;
  const magic = await readMagic(path);
  const sample = await readSample(path, magic);
  const chosen = encoding ? checkEncoding(encoding) : detectEncoding(sample);
  let read = 0;
  const bytes = openBytes(path, magic, (n) => (read += n));
  const text = pipeline(bytes, decodeStream(chosen), () => {});
  return { encoding: chosen, totalBytes, bytesRead: () => read, sample, text };
}
