import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import semver from 'semver';

/**
 * Every installed package runs on every Node the project declares (`engines.node` of package.json) and on
 * the Node running the tests: what `npm ci` warns about as EBADENGINE, and only warns. A dependency that
 * needs a newer Node than the project declares fails here, until it is pinned to a version that does
 * not (`overrides` in package.json) or the project moves its declared Node on purpose.
 */

const root = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/** The installed packages of the lock file (platform packages of other machines are listed but not installed) with a Node range. */
const ranges = Object.entries(lock.packages)
  .filter(([path]) => path !== '' && existsSync(join(root, path)))
  .flatMap(([path, entry]) => {
    const node = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    return node === undefined ? [] : [{ name: `${path.replace(/^.*node_modules\//, '')}@${entry.version}`, node }];
  });

test("the project's declared Node range is a valid range that the running Node satisfies", () => {
  assert.ok(semver.validRange(manifest.engines.node), manifest.engines.node);
  assert.ok(semver.satisfies(process.version, manifest.engines.node), `${process.version} is outside ${manifest.engines.node}`);
});

test('every installed package accepts every Node the project declares, and the running one', () => {
  assert.ok(ranges.length > 50, `${ranges.length} packages declare a Node range`);
  const bad = ranges.filter((p) => !semver.subset(manifest.engines.node, p.node) || !semver.satisfies(process.version, p.node));
  assert.deepEqual(
    bad.map((p) => `${p.name} needs node ${p.node}`),
    [],
    `the project declares node ${manifest.engines.node}: pin these (package.json "overrides") or move the declared range`,
  );
});
