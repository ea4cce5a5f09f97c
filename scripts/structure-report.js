#!/usr/bin/env node
// Figures of the source tree's shape, for a review or a before/after note: source files over 300 lines,
// functions over 100 lines, the edges between modules and the cycles among them, module-level mutable caches and
// the tables written by more than one module. test/structure/ reads the
// same module graph to enforce the allowed one (docs/architecture.md).
//
//   node scripts/structure-report.js           the figures and the lists behind them
//   node scripts/structure-report.js --json    the same as JSON
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const srcDir = join(root, 'src');

/** Source files of src/ (tests left out: they may reach anything they test). */
export function sourceFiles(dir = srcDir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Relative imports of a file (static, type-only, re-exports and dynamic), resolved to the files given. */
export function importsOf(file, known) {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((i) => i.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name))
    .filter((path) => known.has(path));
}

/**
 * The module a file of src/ belongs to: `src/modules/<name>/…` is `<name>`; `infra`, `plugins` and `cli` are
 * their folders; `config` is src/config.ts (read by every layer); `app` is the composition root (app.ts,
 * bootstrap.ts), the one place that wires modules together.
 */
export function moduleOf(file) {
  const parts = relative(srcDir, file).split(sep);
  if (parts[0] === 'modules') return parts[1];
  if (parts.length > 1) return parts[0];
  return parts[0] === 'config.ts' ? 'config' : 'app';
}

/** Edges between modules: `from → to` with the file-level imports that make each one. */
export function moduleEdges(files = sourceFiles()) {
  const known = new Set(files);
  const edges = new Map();
  for (const file of files) {
    const from = moduleOf(file);
    for (const target of importsOf(file, known)) {
      const to = moduleOf(target);
      if (to === from) continue;
      const key = `${from} → ${to}`;
      if (!edges.has(key)) edges.set(key, { from, to, imports: [] });
      edges.get(key).imports.push(`${relative(srcDir, file)} → ${relative(srcDir, target)}`);
    }
  }
  return [...edges.values()].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
}

/** Groups of modules that reach each other (strongly connected components of two or more; Tarjan). */
export function moduleCycles(edges) {
  const graph = new Map();
  for (const { from, to } of edges) {
    if (!graph.has(from)) graph.set(from, []);
    if (!graph.has(to)) graph.set(to, []);
    graph.get(from).push(to);
  }
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node)) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)));
    }
    if (low.get(node) !== index.get(node)) return;
    const group = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1) groups.push(group.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return groups.sort((a, b) => a[0].localeCompare(b[0]));
}

/** Functions (declarations, expressions, arrows, methods) whose text spans more than `limit` lines. */
export function longFunctions(files = sourceFiles(), limit = 100) {
  const found = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        if (end - start + 1 > limit)
          found.push({ file: relative(srcDir, file), line: start + 1, lines: end - start + 1, name: functionName(node) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found.sort((a, b) => b.lines - a.lines);
}

function functionName(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  if (parent && ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText().slice(0, 40)})`;
  return '(anonymous)';
}

/** Source files (tests left out) longer than `limit` lines. */
export function longFiles(files = sourceFiles(), limit = 300) {
  return files
    .map((file) => ({ file: relative(srcDir, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter((f) => f.lines > limit)
    .sort((a, b) => b.lines - a.lines);
}

/** Kysely's write calls, whose first argument names the table (`insertInto('places')`, `'places as p'`). */
const writeCalls = new Set(['insertInto', 'replaceInto', 'updateTable', 'deleteFrom', 'mergeInto']);
/** Writes in SQL text: INSERT INTO, UPDATE … SET, DELETE FROM, COPY … FROM (a table name right after). */
const sqlWrites = [
  /\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+"?([a-z_][a-z0-9_]*)/gi,
  /\bUPDATE\s+"?([a-z_][a-z0-9_]*)"?\s+(?:AS\s+\w+\s+)?SET\b/gi,
  /\bDELETE\s+FROM\s+"?([a-z_][a-z0-9_]*)/gi,
  /\bCOPY\s+"?([a-z_][a-z0-9_]*)"?\s*(?:\([^)]*\)\s*)?FROM\b/gi,
];

/**
 * The tables each file of src/ writes: Kysely's write calls with a table name, and INSERT/UPDATE/DELETE/COPY in
 * the text of string and template literals (comments are not read). Read as text, as the imports are: a table
 * named in a variable is not seen.
 */
export function tableWrites(files = sourceFiles()) {
  const found = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const tables = new Set();
    const visit = (node) => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && writeCalls.has(node.expression.name.text)) {
        const first = node.arguments[0];
        if (first && ts.isStringLiteralLike(first)) tables.add(first.text.split(/\s+as\s+/i)[0].trim());
      }
      if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
        for (const pattern of sqlWrites) for (const m of node.text.matchAll(pattern)) tables.add(m[1].toLowerCase());
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    for (const table of [...tables].sort()) found.push({ file: relative(srcDir, file), module: moduleOf(file), table });
  }
  return found;
}

/** The tables of the schema (`Database` in infra/db/schema.ts). */
export function schemaTables() {
  const text = readFileSync(join(srcDir, 'infra', 'db', 'schema.ts'), 'utf8');
  const body = /export interface Database \{([\s\S]*?)\n\}/.exec(text)?.[1] ?? '';
  return [...body.matchAll(/^\s+([a-z_][a-z0-9_]*)\??:/gm)].map((m) => m[1]);
}

/** Constructors whose instance, made once at a module's top level, is a cache the whole process shares. */
const cacheConstructors = new Set(['Map', 'WeakMap', 'Set', 'WeakSet', 'Lru']);

/**
 * Mutable caches at the top level of a module: a `let` (state the module reassigns), or a `const` made by
 * `new Map()`, `new WeakMap()`, `new Set()`, `new Lru(…)` without initial entries (a Map or Set built from a
 * literal list is a table, not a cache). Such state lives as long as the process and is shared by every caller;
 * a cache belongs to the object whose lifetime it shares (the search object, a read-pool thread's tasks).
 */
export function moduleCaches(files = sourceFiles()) {
  const found = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    for (const statement of source.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      const mutable = (statement.declarationList.flags & ts.NodeFlags.Let) !== 0;
      for (const d of statement.declarationList.declarations) {
        const init = d.initializer;
        const made =
          init &&
          ts.isNewExpression(init) &&
          ts.isIdentifier(init.expression) &&
          cacheConstructors.has(init.expression.text) &&
          (init.expression.text === 'Lru' || (init.arguments ?? []).length === 0);
        if (mutable || made) {
          const line = source.getLineAndCharacterOfPosition(d.getStart(source)).line + 1;
          found.push({ file: relative(srcDir, file), line, name: d.name.getText(source) });
        }
      }
    }
  }
  return found;
}

/** The files of src/ that import `target` (a path relative to src/), left out those under `except` (a folder relative to src/). */
export function importersOf(target, except, files = sourceFiles()) {
  const known = new Set(files);
  const path = join(srcDir, target);
  return files
    .filter((f) => (!except || !relative(join(srcDir, except), f).match(/^[^.]/)) && importsOf(f, known).includes(path))
    .map((f) => relative(srcDir, f));
}

export function report() {
  const files = sourceFiles();
  const edges = moduleEdges(files);
  const byTable = new Map();
  for (const w of tableWrites(files).filter((w) => !w.file.startsWith(`infra${sep}db${sep}`))) {
    if (!byTable.has(w.table)) byTable.set(w.table, new Set());
    byTable.get(w.table).add(w.module);
  }
  const sharedTables = [...byTable]
    .filter(([, modules]) => modules.size > 1)
    .map(([table, modules]) => ({ table, modules: [...modules].sort() }))
    .sort((a, b) => a.table.localeCompare(b.table));
  return {
    longFiles: longFiles(files),
    longFunctions: longFunctions(files),
    edges,
    cycles: moduleCycles(edges),
    caches: moduleCaches(files),
    sharedTables,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = report();
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(r, null, 2));
  } else {
    console.log(`source files over 300 lines: ${r.longFiles.length}`);
    for (const f of r.longFiles) console.log(`  ${String(f.lines).padStart(5)}  ${f.file}`);
    console.log(`functions over 100 lines: ${r.longFunctions.length}`);
    for (const f of r.longFunctions) console.log(`  ${String(f.lines).padStart(5)}  ${f.file}:${f.line} ${f.name}`);
    console.log(`module edges: ${r.edges.length}`);
    for (const e of r.edges) console.log(`  ${e.from} → ${e.to}  (${e.imports.length} import${e.imports.length === 1 ? '' : 's'})`);
    console.log(`module cycles: ${r.cycles.length}`);
    for (const c of r.cycles) console.log(`  ${c.join(' ⇄ ')}`);
    const inSearch = r.caches.filter((c) => c.file.startsWith(join('modules', 'search')));
    console.log(`module-level mutable caches: ${r.caches.length} (in search/: ${inSearch.length})`);
    for (const c of r.caches) console.log(`  ${c.file}:${c.line} ${c.name}`);
    console.log(`tables written by more than one module: ${r.sharedTables.length} (owners and reasons: test/structure/tables.test.ts)`);
    for (const t of r.sharedTables) console.log(`  ${t.table}: ${t.modules.join(', ')}`);
  }
}
