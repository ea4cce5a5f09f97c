import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

/**
 * A child process promotes a steady stream of short-lived arrays into the old generation (each stays
 * reachable for a while, as an export's rows do) and reports the largest old-space size it saw.
 */
function peakOldSpaceMb(limit: boolean): number {
  const memory = pathToFileURL(new URL('./memory.ts', import.meta.url).pathname).href;
  const script = `
    import { getHeapSpaceStatistics } from 'node:v8';
    ${limit ? `const { limitHeapGrowth } = await import(${JSON.stringify(memory)}); limitHeapGrowth();` : ''}
    const held = [];
    let peak = 0;
    for (let i = 0; i < 400; i++) {
      held.push(Array.from({ length: 20_000 }, (_, j) => ({ i, j, text: 'row ' + j })));
      if (held.length > 8) held.shift();
      const old = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_size;
      peak = Math.max(peak, old);
    }
    console.log(peak / 1048576);
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return Number(run.stdout.trim());
}

test('limitHeapGrowth keeps the old generation near its live size while garbage is promoted', () => {
  const unlimited = peakOldSpaceMb(false);
  const limited = peakOldSpaceMb(true);
  assert.ok(limited < unlimited * 0.8, `old space peaked at ${limited.toFixed(0)} MB with the limit, ${unlimited.toFixed(0)} MB without`);
});
