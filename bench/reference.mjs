#!/usr/bin/env node
// The in-run reference: the bare pipeline of issue 8, with no checkpoints, no
// retries and no per-line work. Read a Data Source's files into 10 MB
// buffers, cut at the last newline, compress (--compress compressions in
// flight on the threadpool: bench/lib/runs.mjs gives the CPUs, as the
// agent's compression.threads: auto does), POST over HTTP/1.1 (undici Pool, as spoolship uses) with
// wait=true, its requests started no faster than --rps a second (spaced as
// the agent's own budget spaces them, 5 % apart: the platform's limit binds a
// bare pipeline as it binds the agent; 0: unpaced). Prints one JSON line with
// what it did. Run by bench/run.mjs in its own process so that its CPU and
// RSS are measured like the agent's.
//
//   node bench/reference.mjs --dir DIR --ds NAME --url URL --token T [--codec zstd --level 3 --chunk 10000000 --compress 2 --posts 8 --rps 100]
import { closeSync, openSync, readSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { Pool } from 'undici';

const a = Object.fromEntries(
  process.argv
    .slice(2)
    .map((v, i, all) => (v.startsWith('--') ? [v.slice(2), all[i + 1]] : null))
    .filter(Boolean),
);
const codec = a.codec ?? 'zstd';
const level = Number(a.level ?? 3);
const CHUNK = Number(a.chunk ?? 10_000_000);
const MAX_COMPRESS = Number(a.compress ?? 2);
const MAX_POSTS = Number(a.posts ?? 8);
const SPACING_MS = Number(a.rps ?? 0) > 0 ? (1000 / Number(a.rps)) * 1.05 : 0;
const gzip = promisify(zlib.gzip);
// @mongodb-js/zstd 1.2.2's index.js drops the level (`compress(data)` calls the
// binding without it, so every level is zstd's default, 3). The reference
// calls the binding itself so that --level means what it says.
const zstd = createRequire(import.meta.url)('@mongodb-js/zstd/bindings');
const compress = codec === 'zstd' ? (b) => zstd.compress(b, level) : codec === 'gzip' ? (b) => gzip(b, { level }) : async (b) => b;
const encoding = codec === 'none' ? null : codec;

const url = new URL(a.url);
const pool = new Pool(url.origin, { connections: MAX_POSTS });
const query = `/v0/events?name=${encodeURIComponent(a.ds)}&wait=true`;
const headers = { authorization: `Bearer ${a.token}`, 'content-type': 'application/x-ndjson' };
if (encoding) headers['content-encoding'] = encoding;

/** Request starts at least SPACING_MS apart, first come first served (src/sender/limiter.ts). */
let lastStart = -Infinity;
let paceChain = Promise.resolve();
const paced = () =>
  (paceChain = paceChain.then(async () => {
    const wait = lastStart + SPACING_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    lastStart = performance.now();
  }));

let compressing = 0;
let posting = 0;
const waiters = [];
const wake = () => waiters.splice(0).forEach((w) => w());
const until = async (cond) => {
  while (!cond()) await new Promise((r) => waiters.push(r));
};
const out = { bytes: 0, lines: 0, requests: 0, wireBytes: 0, failures: 0 };
const tasks = new Set();
const t0 = performance.now();

// A small pool of reusable read buffers: one being filled, the others being compressed.
const free = Array.from({ length: MAX_COMPRESS + 1 }, () => Buffer.allocUnsafe(CHUNK));

async function ship(buf, len) {
  const body = await compress(buf.subarray(0, len));
  if (codec === 'none') {
    // identity: the body is the read buffer itself, so it is returned after the POST
  } else {
    free.push(buf);
  }
  compressing--;
  wake();
  await until(() => posting < MAX_POSTS);
  posting++;
  try {
    if (SPACING_MS > 0) await paced();
    const res = await pool.request({ method: 'POST', path: query, headers, body });
    const text = await res.body.text();
    out.requests++;
    out.wireBytes += body.length;
    if (res.statusCode !== 200) {
      out.failures++;
      process.stderr.write(`reference: HTTP ${res.statusCode} ${text}\n`);
    } else {
      out.lines += JSON.parse(text).successful_rows;
    }
  } finally {
    posting--;
    if (codec === 'none') free.push(buf);
    wake();
  }
}

function submit(buf, len) {
  out.bytes += len;
  compressing++;
  const t = ship(buf, len).finally(() => tasks.delete(t));
  tasks.add(t);
}

const dir = path.join(a.dir, a.ds);
const files = readdirSync(dir).filter((n) => n.endsWith('.ndjson')).sort();
for (const name of files) {
  const fd = openSync(path.join(dir, name), 'r');
  let pos = 0;
  let carry = 0; // bytes of an incomplete line at the start of `buf`
  await until(() => free.length > 0 && compressing < MAX_COMPRESS);
  let buf = free.pop();
  for (;;) {
    const n = readSync(fd, buf, carry, CHUNK - carry, pos);
    pos += n;
    const end = carry + n;
    if (n === 0) {
      if (end > 0) {
        buf[end] = 10; // file ends mid-line: never in this corpus
        submit(buf, end);
      } else free.push(buf);
      break;
    }
    const cut = buf.lastIndexOf(10, end - 1) + 1;
    await until(() => free.length > 0 && compressing < MAX_COMPRESS);
    const next = free.pop();
    carry = end - cut;
    buf.copy(next, 0, cut, end);
    submit(buf, cut);
    buf = next;
  }
  closeSync(fd);
}
await Promise.all([...tasks]);
out.ms = performance.now() - t0;
await pool.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
