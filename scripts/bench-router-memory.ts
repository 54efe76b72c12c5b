/**
 * npm run bench:router-memory: what a mapping document costs a router's memory, HAProxy and the
 * agent apart. Runs `cellctl router local` (HAProxy and the agent, the agent in the CLI's process)
 * on a small document, then writes a document with BENCH_PINS exact pins (default 100,000) over the
 * file and waits until it is in force; reports each process's peak resident memory (VmHWM) before
 * and after, and what that makes per pin and per byte of the document. The limits in
 * lib/domain/mapping/limits.ts (TASK_BYTES_PER_ENTRY, AGENT_BYTES_PER_DOCUMENT_BYTE) come from this.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { initialMapping } from '../lib/domain/mapping';

const PINS = Number(process.env.BENCH_PINS ?? 100_000);
/** Characters of each pinned key (BENCH_KEY_LENGTH, 15 by default; keys may have up to 128). */
const KEY_LENGTH = Number(process.env.BENCH_KEY_LENGTH ?? 15);

const peakKiB = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
const residentKiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function version(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', headers: { 'x-tenant-id': 'probe' } }, (res) => {
        res.resume();
        resolve(res.headers['x-mapping-version'] ? Number(res.headers['x-mapping-version']) : undefined);
      })
      .on('error', () => resolve(undefined));
  });
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-router-memory-'));
  const cell = http.createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1');
  await new Promise((r) => cell.once('listening', r));
  const endpoint = `http://127.0.0.1:${(cell.address() as net.AddressInfo).port}`;
  const now = new Date().toISOString();
  const small = initialMapping([{ id: 'cell-a', endpoint, state: 'active' }], 16384, { now });
  const file = path.join(dir, 'mapping.json');
  fs.writeFileSync(file, JSON.stringify(small));
  const port = await freePort();
  const cli = spawn(
    process.execPath,
    [path.join(__dirname, '..', 'bin', 'cellctl.js'), 'router', 'local', '--mapping', file, '--port', String(port), '--debug-headers'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  try {
    const started = await new Promise<string>((resolve, reject) => {
      let out = '';
      cli.stdout!.on('data', (d) => {
        out += d;
        if (out.includes('router listening')) resolve(out);
      });
      cli.once('exit', (code) => reject(new Error(`cellctl router local exited (${code})`)));
    });
    const haproxy = Number(/HAProxy pid (\d+)/.exec(started)![1]);
    await new Promise((r) => setTimeout(r, 1000));
    const before = { agent: peakKiB(cli.pid!), haproxy: peakKiB(haproxy), haproxyNow: residentKiB(haproxy) };
    const exact: Record<string, string> = {};
    for (let i = 0; i < PINS; i++) exact[`tenant-${String(i).padStart(8, '0')}`.padEnd(KEY_LENGTH, 'k')] = 'cell-a';
    const text = JSON.stringify({ ...small, version: 2, overrides: { ...small.overrides, exact } });
    fs.writeFileSync(file, text);
    const t0 = Date.now();
    while ((await version(port)) !== 2) {
      if (Date.now() - t0 > 300_000) throw new Error('the large document was not applied within 300 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const applyMs = Date.now() - t0;
    await new Promise((r) => setTimeout(r, 1000));
    const after = { agent: peakKiB(cli.pid!), haproxy: peakKiB(haproxy), haproxyNow: residentKiB(haproxy) };
    // Then a second document as large over the first (every pin another key): the agent holds the
    // one in force and the new one, HAProxy both versions of each map, at once.
    const next: Record<string, string> = {};
    for (let i = 0; i < PINS; i++) next[`other-${String(i).padStart(9, '0')}`.padEnd(KEY_LENGTH, 'k')] = 'cell-a';
    fs.writeFileSync(file, JSON.stringify({ ...small, version: 3, overrides: { ...small.overrides, exact: next } }));
    const t1 = Date.now();
    while ((await version(port)) !== 3) {
      if (Date.now() - t1 > 300_000) throw new Error('the second large document was not applied within 300 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 1000));
    const swapped = { agent: peakKiB(cli.pid!), haproxy: peakKiB(haproxy) };
    const bytes = Buffer.byteLength(text);
    const mib = (kib: number) => (kib / 1024).toFixed(1);
    process.stdout.write(
      `document: ${PINS} pins of ${KEY_LENGTH}-character keys, ${(bytes / 1048576).toFixed(1)} MiB of JSON; applied in ${applyMs} ms\n`,
    );
    process.stdout.write(
      '| process | peak before (MiB) | peak after (MiB) | added | per pin (bytes) | per document byte |\n|---|---|---|---|---|---|\n',
    );
    for (const [name, b, a] of [
      ['agent (cellctl router local)', before.agent, after.agent],
      ['HAProxy', before.haproxy, after.haproxy],
      ['agent, large over large', before.agent, swapped.agent],
      ['HAProxy, large over large', before.haproxy, swapped.haproxy],
      ['task (both), large over large', before.agent + before.haproxy, swapped.agent + swapped.haproxy],
    ] as const) {
      process.stdout.write(
        `| ${name} | ${mib(b)} | ${mib(a)} | ${mib(a - b)} | ${Math.round(((a - b) * 1024) / PINS)} | ${(((a - b) * 1024) / bytes).toFixed(2)} |\n`,
      );
    }
    process.stdout.write(`HAProxy resident after the apply: ${mib(after.haproxyNow)} MiB (before ${mib(before.haproxyNow)})\n`);
  } finally {
    cli.kill('SIGTERM');
    await new Promise((r) => cli.once('exit', r));
    cell.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${(error as Error).stack}\n`);
    process.exit(1);
  },
);
