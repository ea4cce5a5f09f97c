#!/usr/bin/env node
// Starts the multi-node layout of deploy/README.md on this machine: N API nodes on consecutive ports,
// sharing one PostgreSQL and one Redis, each a `leadatlas serve` process of its own. The multi-node test
// drives it through `startCluster`; from a shell it runs until Ctrl-C:
//
//   node deploy/cluster.mjs --nodes 2 --port 3001 \
//     --database postgres://postgres@127.0.0.1:5432/leadatlas --redis redis://127.0.0.1:6379
//
// Options: --nodes N (2), --port FIRST (3001), --database URL (required: PostgreSQL), --redis URL,
// --source (run src/ through tsx instead of the compiled dist/). Other settings come from the environment.
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Starts `nodes` servers and resolves once every one answers /readyz (or rejects with the output of the
 * first that exits). Each node: { port, url, process, stop(signal) → exit code }.
 */
export async function startCluster({ nodes = 2, port = 3001, database, redis, env = {}, source = false, readyTimeoutMs = 120_000 }) {
  if (!database) throw new Error('--database: a postgres:// URL that every node shares');
  const started = [];
  for (let i = 0; i < nodes; i++) {
    const nodePort = port + i;
    const args = source ? ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'serve'] : [join(root, 'bin/leadatlas.js'), 'serve'];
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        IMPORT_DEMO_DATA: 'false',
        ...env,
        HOST: '127.0.0.1',
        PORT: String(nodePort),
        DATABASE_URL: database,
        ...(redis ? { REDIS_URL: redis } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise((done) => child.once('exit', (code) => done(code)));
    started.push({
      port: nodePort,
      url: `http://127.0.0.1:${nodePort}`,
      process: child,
      output: () => output,
      exited,
      async stop(signal = 'SIGTERM') {
        if (child.exitCode === null) child.kill(signal);
        return exited;
      },
    });
  }
  const deadline = Date.now() + readyTimeoutMs;
  for (const node of started) {
    for (;;) {
      if (node.process.exitCode !== null) {
        await Promise.all(started.map((n) => n.stop('SIGKILL')));
        throw new Error(`node on port ${node.port} exited with ${node.process.exitCode}:\n${node.output()}`);
      }
      const ready = await fetch(`${node.url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) {
        await Promise.all(started.map((n) => n.stop('SIGKILL')));
        throw new Error(`node on port ${node.port} not ready in time:\n${node.output()}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return started;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const cluster = await startCluster({
    nodes: Number(value('--nodes', '2')),
    port: Number(value('--port', '3001')),
    database: value('--database', process.env.DATABASE_URL),
    redis: value('--redis', process.env.REDIS_URL),
    source: args.includes('--source'),
  });
  for (const node of cluster) console.log(`node ready: ${node.url}`);
  const stop = async () => {
    await Promise.all(cluster.map((n) => n.stop('SIGTERM')));
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
