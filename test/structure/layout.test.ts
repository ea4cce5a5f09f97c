import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { importsOf, longFiles, moduleCaches, sourceFiles, srcDir as src } from '../../scripts/structure-report.js';

/**
 * Rules of the layout that code review would otherwise have to catch (docs/architecture.md):
 * no import cycles in src/, no branch on the SQL dialect outside the dialect helpers, no route that
 * casts its request, no source file past 600 lines but the data tables, search holding no cache at a module's
 * top level and reaching no other module's repository but the change log's (module boundaries are
 * modules.test.ts's, table owners tables.test.ts's).
 */

/** Every cycle's files, each cycle reported once (depth-first search over the import graph). */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

/** `file:line: text` of every line of the files that matches. */
function linesMatching(files: string[], pattern: RegExp): string[] {
  return files.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${relative(src, f)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

describe('the layout of src/', () => {
  const files = sourceFiles();
  const known = new Set(files);

  test('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    assert.deepEqual(findCycles(graph), [['a', 'b', 'c']]);
    assert.deepEqual(
      findCycles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
      [],
    );
  });

  test('has no import cycles', () => {
    const graph = new Map(files.map((f) => [f, importsOf(f, known)]));
    const cycles = findCycles(graph).map((c) => c.map((f) => relative(src, f)).join(' → '));
    assert.deepEqual(cycles, []);
  });

  test('branches on the SQL dialect only in the database layer and the dialect helpers', () => {
    // Services and repositories ask a helper declared with `byDialect` (src/infra/db/dialect.ts); only
    // src/infra/db (connections, migrations, threads) reads the dialect itself.
    const branch = /\.dialect\b|\bdb\.sqlite\s*(\?|&&|\|\|)|!\s*db\.sqlite\b|\bif \(db\.sqlite\b|db\.sqlitePath\s*(\?(?!\?)|&&|\|\|)/;
    assert.deepEqual(
      linesMatching(
        files.filter((f) => !relative(src, f).startsWith(join('infra', 'db'))),
        branch,
      ),
      [],
    );
  });

  test('casts no request in a route: request types come from the route schemas', () => {
    // `request.query as …` says the type provider does not know the schema; declare it in the route's
    // `schema` (infra/http/type-provider.ts types it) or parse the value with its schema.
    const cast = /\brequest\.(query|body|params)\)?\s+as\b/;
    assert.deepEqual(linesMatching(files, cast), []);
  });

  test('has no source file over 600 lines but the data tables (the category maps of taxonomy/source-maps/)', () => {
    const dataTables = join('modules', 'taxonomy', 'source-maps');
    assert.deepEqual(
      longFiles(files, 600)
        .filter((f) => !f.file.startsWith(dataTables))
        .map((f) => `${f.file}: ${f.lines} lines`),
      [],
    );
  });

  test('finds a module-level cache when there is one (the check itself)', () => {
    const caches = moduleCaches(files).map((c) => c.name);
    // geo's gazetteer is one per process on purpose (reference data, ~140 MB): the check sees it.
    assert.ok(caches.includes('shared'), caches.join(', '));
  });

  test('search holds no mutable cache at a module level: its caches belong to the search object or a read thread', () => {
    const search = join('modules', 'search');
    assert.deepEqual(
      moduleCaches(files)
        .filter((c) => c.file.startsWith(search))
        .map((c) => `${c.file}:${c.line} ${c.name}`),
      [],
    );
  });

  test("search imports no other module's repository but the change log's (places/place-changes.repository.ts)", () => {
    const search = join(src, 'modules', 'search');
    const changeLog = join(src, 'modules', 'places', 'place-changes.repository.ts');
    const reached = files
      .filter((f) => f.startsWith(search))
      .flatMap((f) =>
        importsOf(f, known)
          .filter((to) => !to.startsWith(search) && to.endsWith('.repository.ts') && to !== changeLog)
          .map((to) => `${relative(src, f)} → ${relative(src, to)}`),
      );
    assert.deepEqual(reached, []);
  });
});
