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
}

export const allowAll: RobotsRules = { robot: null, crawlDelayMs: null, disallowAll: null };

/** Parses a robots.txt with robots-parser (Google's matching rules: longest match, `*` and `$`, Allow beats Disallow on ties). */
export function parseRobots(robotsUrl: string, text: string, agent: string): RobotsRules {
  const robot = robotsParser(robotsUrl, text);
  const delay = robot.getCrawlDelay(agent);
  return { robot, crawlDelayMs: typeof delay === 'number' && Number.isFinite(delay) && delay > 0 ? delay * 1000 : null, disallowAll: null };
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

/** Robots rules per origin, the most recently used kept (a promise, so that concurrent crawls of one host fetch it once). */
export class RobotsCache<T> {
  private readonly entries = new Map<string, Promise<T>>();

  constructor(private readonly capacity: number) {}

  get(origin: string): Promise<T> | undefined {
    const entry = this.entries.get(origin);
    if (entry) {
      this.entries.delete(origin);
      this.entries.set(origin, entry);
    }
    return entry;
  }

  set(origin: string, rules: Promise<T>): void {
    this.entries.set(origin, rules);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(origin: string): void {
    this.entries.delete(origin);
  }

  get size(): number {
    return this.entries.size;
  }
}
