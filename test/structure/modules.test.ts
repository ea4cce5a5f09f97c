import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { type ModuleEdge, moduleCycles, moduleEdges, srcDir } from '../../scripts/structure-report.js';

/**
 * Which module of src/ may import which (docs/architecture.md, "Module boundaries"). A module is a folder of
 * src/modules, or `infra`, `plugins`, `cli`, `config` (src/config.ts) and `app` (app.ts and bootstrap.ts, the
 * composition root). The map has no cycle, so neither has the code; an import the map does not list fails the
 * test, naming the files. When two modules need each other, the contract moves to the module that owns it.
 */
const modules = [
  'auth',
  'conflation',
  'contacts',
  'dashboard',
  'enrichment',
  'exports',
  'geo',
  'importers',
  'leads',
  'match',
  'mcp',
  'monitors',
  'places',
  'reference',
  'search',
  'suppressions',
  'taxonomy',
  'trust',
  'webhooks',
];

export const allowedImports: Record<string, readonly string[]> = {
  app: ['config', 'infra', 'plugins', ...modules],
  cli: ['app', 'auth', 'config', 'enrichment', 'importers', 'infra', 'match', 'monitors', 'places', 'trust'],
  config: ['infra'],
  plugins: ['auth', 'config', 'infra'],
  infra: [],
  geo: ['infra'],
  contacts: ['geo', 'infra'],
  places: ['contacts', 'infra'],
  taxonomy: ['infra', 'places'],
  trust: ['contacts', 'infra', 'places'],
  conflation: ['contacts', 'geo', 'infra', 'places', 'taxonomy'],
  importers: ['conflation', 'contacts', 'geo', 'infra', 'places', 'taxonomy'],
  webhooks: ['infra'],
  auth: ['config', 'infra'],
  suppressions: ['geo', 'infra', 'places'],
  leads: ['infra', 'places', 'suppressions'],
  reference: ['infra', 'places', 'taxonomy'],
  search: ['config', 'contacts', 'geo', 'infra', 'leads', 'places', 'reference', 'taxonomy', 'trust'],
  exports: ['auth', 'config', 'contacts', 'infra', 'places', 'search', 'webhooks'],
  enrichment: [
    'auth',
    'config',
    'contacts',
    'exports',
    'geo',
    'importers',
    'infra',
    'places',
    'search',
    'suppressions',
    'taxonomy',
    'trust',
    'webhooks',
  ],
  monitors: ['config', 'infra', 'leads', 'places', 'search', 'webhooks'],
  match: [
    'auth',
    'config',
    'conflation',
    'contacts',
    'exports',
    'geo',
    'importers',
    'infra',
    'leads',
    'places',
    'search',
    'taxonomy',
    'webhooks',
  ],
  mcp: ['exports', 'infra', 'match', 'places', 'reference', 'search', 'suppressions'],
  dashboard: [
    'auth',
    'config',
    'contacts',
    'enrichment',
    'exports',
    'geo',
    'infra',
    'match',
    'monitors',
    'places',
    'search',
    'suppressions',
    'webhooks',
  ],
};

/** The edges of `edges` the map does not allow, each with the imports that make it. */
export function edgesOutside(edges: ModuleEdge[], allowed: Record<string, readonly string[]>): string[] {
  return edges.filter((e) => !(allowed[e.from] ?? []).includes(e.to)).map((e) => `${e.from} → ${e.to}: ${e.imports.join(', ')}`);
}

const mapEdges = Object.entries(allowedImports).flatMap(([from, tos]) => tos.map((to) => ({ from, to })));

describe('the boundaries between modules', () => {
  test('reports an edge the map does not allow, and a cycle, when there is one (the checks themselves)', () => {
    const edges = [
      { from: 'a', to: 'b', imports: ['modules/a/x.ts → modules/b/y.ts'] },
      { from: 'b', to: 'a', imports: ['modules/b/y.ts → modules/a/z.ts'] },
    ];
    assert.deepEqual(edgesOutside(edges, { a: ['b'], b: [] }), ['b → a: modules/b/y.ts → modules/a/z.ts']);
    assert.deepEqual(moduleCycles(edges), [['a', 'b']]);
    assert.deepEqual(moduleCycles(edges.slice(0, 1)), []);
  });

  test('every module of src/modules has an entry in the map', () => {
    const folders = readdirSync(join(srcDir, 'modules'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    assert.deepEqual(
      folders.filter((m) => !(m in allowedImports)),
      [],
    );
  });

  test('the map allows no cycle between modules', () => {
    assert.deepEqual(moduleCycles(mapEdges), []);
  });

  test('infra imports no module', () => {
    assert.deepEqual(allowedImports.infra, []);
  });

  test('every import between modules is one the map allows', () => {
    assert.deepEqual(edgesOutside(moduleEdges(), allowedImports), []);
  });
});
