/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits for `promise`, or rejects with the signal's reason as soon as it aborts. */
function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** At most `limit` holders at once, served in the order they asked; a waiter whose signal aborts leaves the line. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];

  constructor(private readonly limit: number) {}

  async acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.active < this.limit) {
      this.active++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const entry = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next in line, so a newcomer cannot overtake it.
      if (next) next.grant();
      else this.active--;
    };
  }
}

interface HostState {
  tail: Promise<void>;
  pending: number;
  /** When the next request to the host may start. */
  readyAt: number;
}

/**
 * One request at a time per host, each starting at least the host's delay after the previous one ended,
 * whoever asks (two places with the same website, or a site whose links lead to a host crawled elsewhere).
 * A host's entry goes once nothing waits for it and its delay has passed, so the map holds only busy hosts.
 */
export class HostGate {
  private readonly hosts = new Map<string, HostState>();

  constructor(private readonly now: () => number = Date.now) {}

  async run<T>(host: string, delayMs: number, signal: AbortSignal, request: () => Promise<T>): Promise<T> {
    let state = this.hosts.get(host);
    if (!state) {
      state = { tail: Promise.resolve(), pending: 0, readyAt: 0 };
      this.hosts.set(host, state);
    }
    const previous = state.tail;
    let done!: () => void;
    state.tail = new Promise<void>((resolve) => (done = resolve));
    state.pending++;
    let ran = false;
    try {
      await untilAborted(previous, signal);
      await sleep(state.readyAt - this.now(), signal);
      ran = true;
      return await request();
    } finally {
      if (ran) state.readyAt = this.now() + delayMs;
      state.pending--;
      // A waiter that gave up early still lets the next one in only after the request ahead of it ended.
      void previous.then(done);
      if (state.pending === 0) this.forgetLater(host, state, delayMs);
    }
  }

  /** How many hosts the gate remembers (busy, or within their delay). */
  get size(): number {
    return this.hosts.size;
  }

  private forgetLater(host: string, state: HostState, delayMs: number): void {
    const forget = () => {
      if (state.pending === 0 && this.hosts.get(host) === state) this.hosts.delete(host);
    };
    if (delayMs <= 0) forget();
    else setTimeout(forget, delayMs).unref();
  }
}
