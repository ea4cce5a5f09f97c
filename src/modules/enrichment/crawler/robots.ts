import robotsParserModule from 'robots-parser';

type Robot = ReturnType<typeof robotsParserModule.default>;
// The package is CommonJS (`module.exports = function`) with typings written as an ES default export: the
// default import is the function at run time, which the typings place one level down.
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

/** What a host's robots.txt says: its rules (null when there are none to follow) and the delay it asks for. */
export interface RobotsRules {
  robot: Robot | null;
  crawlDelayMs: number | null;
  /** robots.txt could not be read in a way RFC 9309 reads as "disallow everything" (a 5xx): the reason. */
  disallowAll: string | null;
  /** About what the rules take in memory, for the cache's byte bound. */
  bytes: number;
}

/** What robots-parser's rules take in memory for each character of robots.txt (measured: about 2.6 on a 500 KiB file of rules). */
const parsedBytesPerChar = 3;
/** A cache entry's own cost (its key, the promise, the rules object), whatever the file. */
const entryOverheadBytes = 512;

export const allowAll: RobotsRules = { robot: null, crawlDelayMs: null, disallowAll: null, bytes: entryOverheadBytes };

/** Parses a robots.txt with robots-parser (Google's matching rules: longest match, `*` and `$`, Allow beats Disallow on ties). */
export function parseRobots(robotsUrl: string, text: string, agent: string): RobotsRules {
  const robot = robotsParser(robotsUrl, text);
  const delay = robot.getCrawlDelay(agent);
  return {
    robot,
    crawlDelayMs: typeof delay === 'number' && Number.isFinite(delay) && delay > 0 ? delay * 1000 : null,
    disallowAll: null,
    bytes: entryOverheadBytes + text.length * parsedBytesPerChar,
  };
}

export function robotsAllow(rules: RobotsRules, url: string, agent: string): boolean {
  if (rules.disallowAll) return false;
  // robots-parser answers undefined for a URL of another origin; the cache is keyed by origin, so that is never the case.
  return rules.robot?.isAllowed(url, agent) ?? true;
}

/**
 * The product token robots.txt groups are matched against: the first `Name/version` of the User-Agent
 * that is not the browser-compatibility `Mozilla`, e.g. `LeadAtlasBot` in
 * `Mozilla/5.0 (compatible; LeadAtlasBot/1.0; +https://leadatlas.example/bot)`.
 */
export function robotsAgentOf(userAgent: string): string {
  const tokens = [...userAgent.matchAll(/([A-Za-z][\w.-]*)\/[\w.]+/g)].map((m) => m[1]!);
  return tokens.find((t) => t.toLowerCase() !== 'mozilla') ?? userAgent.split(/[\s/;(]/)[0] ?? '*';
}

/**
 * Robots rules per origin, the most recently used kept (a promise, so that concurrent crawls of one host fetch it
 * once), bounded both in entries and in bytes: a robots.txt may be 500 KiB of rules, so a bound on entries
 * alone would let a thousand hostile ones hold over a gigabyte. An entry's weight (`weigh`) counts once its
 * rules are known; the least recently used go first until both bounds hold.
 */
export class RobotsCache<T> {
  private readonly entries = new Map<string, { rules: Promise<T>; bytes: number }>();
  private totalBytes = 0;

  constructor(private readonly o: { entries: number; maxBytes: number; weigh: (rules: T) => number }) {}

  get(origin: string): Promise<T> | undefined {
    const entry = this.entries.get(origin);
    if (entry) {
      this.entries.delete(origin);
      this.entries.set(origin, entry);
    }
    return entry?.rules;
  }

  set(origin: string, rules: Promise<T>): void {
    this.delete(origin);
    const entry = { rules, bytes: 0 };
    this.entries.set(origin, entry);
    this.evict();
    rules.then(
      (value) => {
        if (this.entries.get(origin) !== entry) return;
        entry.bytes = this.o.weigh(value);
        this.totalBytes += entry.bytes;
        this.evict();
      },
      () => {},
    );
  }

  delete(origin: string): void {
    const entry = this.entries.get(origin);
    if (!entry) return;
    this.totalBytes -= entry.bytes;
    this.entries.delete(origin);
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the entries whose rules are known weigh. */
  get bytes(): number {
    return this.totalBytes;
  }

  private evict(): void {
    while (this.entries.size > this.o.entries || this.totalBytes > this.o.maxBytes) this.delete(this.entries.keys().next().value!);
  }
}
