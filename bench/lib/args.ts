/** The value after `--name` on the command line, or `fallback` when the flag is absent or has no value. */
export function argValue(name: string, fallback: string): string {
  const args = process.argv.slice(2);
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
}
