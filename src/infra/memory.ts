import { setFlagsFromString } from 'node:v8';

/**
 * Keeps a server's JavaScript heap near what it uses. V8 lets the old generation grow to a multiple of
 * its live size (up to 4x, chosen from how fast it collects) before the next full collection, and an
 * export promotes a steady trickle of short-lived row data: a million-row CSV export grew the old
 * generation from ~35 MB to ~95 MB of mostly garbage, and the process's resident memory with it.
 * `--heap-growing-percent` caps that factor (1.2 at 20); with ~35 MB live a full collection then comes
 * every ~7 MB of promotion, each taking a few milliseconds, mostly on V8's concurrent marking.
 *
 * A runtime flag, read at every collection: it applies from the call on, to this isolate and to worker
 * threads. The young generation's size cannot be changed this way (it is set when the isolate starts).
 */
export function limitHeapGrowth(percent = 20): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
