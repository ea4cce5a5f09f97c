/**
 * The server under test, as the benchmarks run it: compiled (`npm run build`, then `node bin/leadatlas.js
 * serve`, as `npm start` does), a child process of its own on a free port, its output appended to
 * var/bench/server.log, never left behind when the benchmark ends.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { openSync, readFileSync } from 'node:fs';
import { type Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

export const root = resolve(import.meta.dirname, '../..');
export const serverLog = resolve(root, 'var/bench/server.log');
export const serverScript = ['bin/leadatlas.js', 'serve'];

/** Limits and quotas out of a benchmark token's way: one token sends tens of thousands of requests a second. */
export const unlimited = {
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000000000',
  QUOTA_REQUESTS_PER_DAY: '1000000000000',
  QUOTA_EXPORT_ROWS_PER_MONTH: '1000000000000',
  QUOTA_CONCURRENT_EXPORTS: '1000',
};

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  srv.close();
  return port;
}

/** Compiles src/ into dist/ (the server runs compiled: under tsx every read thread would load the TypeScript loader too). */
export function buildServer(): void {
  const build = spawnSync(
    process.execPath,
    [resolve(root, 'node_modules/typescript/bin/tsc'), '-p', resolve(root, 'tsconfig.build.json')],
    { cwd: root, encoding: 'utf8' },
  );
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
}

/** Starts a script (TypeScript through tsx, JavaScript as it is) as a child process; `nodeArgs` go to node first (`--cpu-prof`). */
export function start(script: string[], env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  const out = openSync(serverLog, 'a');
  const loader = script[0]!.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, ...script], {
    cwd: root,
    // One server process unless the bench asks for more (`WEB_CONCURRENCY` defaults to the number of cores).
    env: { ...process.env, WEB_CONCURRENCY: '1', ...env },
    stdio: ['ignore', out, out],
  });
  children.push(child);
  return child;
}

/**
 * Waits for the server's first answer below 500. A start on a 1M-place catalog (migrations checked, reference
 * data, the read threads) can take minutes on a shared host, so the default is generous; a server that exits
 * ends the wait at once.
 */
export async function waitFor(url: string, child: ChildProcess, limitMs = 900_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} (see ${serverLog})`);
    const ok = await new Promise<boolean>((done) => {
      const req = request(url, (res) => {
        res.resume();
        done((res.statusCode ?? 500) < 500);
      });
      req.on('error', () => done(false));
      req.end();
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${limitMs / 1000} s`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

/** A field of /proc/PID/status in MB. */
export function procStatus(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** CPU seconds of a process, every thread (utime + stime of /proc/PID/stat, in clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A GET on loopback through `agent` (keep-alive), its status and body. */
export function httpGet(
  agent: Agent,
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

/** Waits until a process spends under 5 % of a core for two seconds (at most ten minutes): its start-up work done. */
export async function waitIdle(pid: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const before = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, 2000));
    if (cpuSeconds(pid) - before < 0.1) return;
  }
}
