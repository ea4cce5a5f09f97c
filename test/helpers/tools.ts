import { type ExecFileSyncOptions, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** External programs some tests need, with the Debian package that provides each (`scripts/test-deps.sh` installs them). */
const packages = { osmium: 'osmium-tool', chromium: 'chromium', sqlite3: 'sqlite3' } as const;
export type Tool = keyof typeof packages;

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, command);
    if (dir !== '' && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The path of a tool the test needs, or an Error whose one line says which tool is missing and how to
 * install it. Called inside a test or hook, so that test fails with that line instead of its file crashing.
 */
export function requireTool(tool: Tool): string {
  const found = onPath(tool);
  if (found) return found;
  const error = new Error(
    `this test needs \`${tool}\`: install Debian's ${packages[tool]} (sh scripts/test-deps.sh, or apt-get install ${packages[tool]})`,
  );
  error.stack = error.message;
  throw error;
}

/** Runs a tool the test needs (see `requireTool`) and returns its standard output. */
export function runTool(tool: Tool, args: string[], options: ExecFileSyncOptions = {}): Buffer {
  return execFileSync(requireTool(tool), args, { stdio: 'pipe', ...options }) as Buffer;
}
