// Types of structure-report.js for the structure tests that read its module graph.
export interface ModuleEdge {
  from: string;
  to: string;
  /** The file-level imports that make the edge (`modules/a/x.ts → modules/b/y.ts`). */
  imports: string[];
}
export interface LongFile {
  file: string;
  lines: number;
}
export interface LongFunction {
  file: string;
  line: number;
  lines: number;
  name: string;
}
export interface TableWrite {
  /** The file, relative to src/. */
  file: string;
  module: string;
  table: string;
}
export interface ModuleCache {
  file: string;
  line: number;
  name: string;
}
export const srcDir: string;
export function sourceFiles(dir?: string): string[];
export function importsOf(file: string, known: Set<string>): string[];
export function moduleOf(file: string): string;
export function moduleEdges(files?: string[]): ModuleEdge[];
export function moduleCycles(edges: Array<Pick<ModuleEdge, 'from' | 'to'>>): string[][];
export function longFunctions(files?: string[], limit?: number): LongFunction[];
export function longFiles(files?: string[], limit?: number): LongFile[];
export function tableWrites(files?: string[]): TableWrite[];
export function schemaTables(): string[];
export function moduleCaches(files?: string[]): ModuleCache[];
export function importersOf(target: string, except?: string, files?: string[]): string[];
export function report(): {
  longFiles: LongFile[];
  longFunctions: LongFunction[];
  edges: ModuleEdge[];
  cycles: string[][];
  caches: ModuleCache[];
  sharedTables: Array<{ table: string; modules: string[] }>;
};
