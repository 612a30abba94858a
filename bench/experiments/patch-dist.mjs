#!/usr/bin/env node
// Experiments, not product code: copies dist/ to bench/corpus/dist-exp (git-
// ignored; it must sit inside the repository so node_modules resolves) and
// applies the changes bench/README.md proposes for src/, as plain string
// edits of the compiled JS, so their effect can be measured before anyone
// changes src/:
//
//   node bench/experiments/patch-dist.mjs A,B,D,E
//   npm run bench -- --agent-dist bench/corpus/dist-exp --cases throughput
//
// Each patch fails loudly when the compiled code no longer looks as expected.
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const out = path.join(root, 'bench/corpus/dist-exp');
const want = (process.argv[2] ?? 'A,B,D,E').split(',');

function edit(file, pairs) {
  const p = path.join(out, file);
  let s = readFileSync(p, 'utf8');
  for (const [from, to] of pairs) {
    if (!s.includes(from)) throw new Error(`${file}: expected text not found:\n${from}`);
    s = s.replace(from, to);
  }
  writeFileSync(p, s);
}

const PATCHES = {
  // A. pipeline.process keeps `batch` (and so its uncompressed body) alive for
  // the whole delivery: drop the body once it is compressed.
  A: () =>
    edit('agent/pipeline.js', [
      ['        const rawLen = batch.body.length;\n', '        const rawLen = batch.body.length;\n        batch.body = Buffer.alloc(0); // EXP A\n'],
    ]),
  // B. Batcher.ensure grows 256 KiB -> 512 KiB -> ... -> 10 MB, copying each
  // time: allocate the cap once (untouched pages cost no RSS).
  B: () => edit('batcher/batcher.js', [['const next = Buffer.allocUnsafe(Math.min(size, cap));', 'const next = Buffer.allocUnsafe(cap); // EXP B']]),
  // F. (with B) reuse batch buffers: the pipeline hands a batch's uncompressed
  // buffer back once it is compressed, and the batcher takes it for its next
  // batch, so 10 MB buffers stop churning through the allocator and the GC.
  // At most 2 free buffers are kept.
  F: () => {
    edit('batcher/batcher.js', [
      [
        'const INITIAL_BATCH_BYTES = 256 * 1024;',
        `const INITIAL_BATCH_BYTES = 256 * 1024;
// EXP F: free batch buffers of exactly max_bytes
const FREE_BUFFERS = [];
export function releaseBatchBuffer(buf, maxBytes) {
    if (buf.byteOffset === 0 && buf.buffer.byteLength === maxBytes && FREE_BUFFERS.length < 2)
        FREE_BUFFERS.push(Buffer.from(buf.buffer, 0, maxBytes));
}`,
      ],
      ['const next = Buffer.allocUnsafe(cap); // EXP B', 'const next = (cap === this.deps.maxBytes && FREE_BUFFERS.pop()) || Buffer.allocUnsafe(cap); // EXP B+F'],
    ]);
    edit('agent/pipeline.js', [
      ["import { isErrno } from '../util/fsx.js';", "import { isErrno } from '../util/fsx.js';\nimport { releaseBatchBuffer } from '../batcher/batcher.js';"],
      [
        '        batch.body = Buffer.alloc(0); // EXP A\n',
        '        if (body.buffer !== batch.body.buffer && this.o.maxBatchBytes) releaseBatchBuffer(batch.body, this.o.maxBatchBytes); // EXP F\n        batch.body = Buffer.alloc(0); // EXP A\n',
      ],
    ]);
    // the pipeline needs max_bytes: pass it from the agent
    edit('agent/agent.js', [['maxInFlight: c.limits.max_in_flight,', 'maxInFlight: c.limits.max_in_flight, maxBatchBytes: c.batch.max_bytes, // EXP F\n']]);
  },
  // G. At the end of a backlog the last partial batch waits linger_ms. When
  // the last batch closed full (a backlog was being shipped), every file is
  // read to its known end and nothing is compressing or in flight, close the
  // rest now. Steady tails (batches closed by linger) are not affected.
  G: () => {
    edit('batcher/batcher.js', [
      ['    close(b) {\n        this.open.delete(b.ds);\n', '    close(b) {\n        this.lastClosedFull = b.len >= 0.9 * this.deps.maxBytes; // EXP G\n        this.open.delete(b.ds);\n'],
    ]);
    edit('agent/agent.js', [
      [
        '    tick() {\n',
        `    tick() {
        // EXP G: a backlog just ended: send the remainder without waiting for linger_ms
        if (this.batcher.lastClosedFull && this.pipeline.batchesActive === 0 && this.batcher.hasOpenData() &&
            [...this.spooler.tailers.values()].every((t) => t.finished || (!t.detached && t.readOffset >= t.lastSize)))
            this.batcher.closeAll();
`,
      ],
    ]);
  },
  // H. The scan tracks files one after another (stat, open, read, fstat,
  // close each): run track() for 16 paths at a time.
  H: () =>
    edit('spool/spooler.js', [
      [
        `        for (const p of await this.listCandidates()) {
            const ds = this.o.router.route(p);
            if (!ds)
                continue;
            const key = await this.track(p, ds);
            if (key)
                seen.add(key);
        }
`,
        `        // EXP H: 16 paths at a time
        const paths = await this.listCandidates();
        let next = 0;
        const worker = async () => {
            while (next < paths.length) {
                const p = paths[next++];
                const ds = this.o.router.route(p);
                if (!ds)
                    continue;
                const key = await this.track(p, ds);
                if (key)
                    seen.add(key);
            }
        };
        await Promise.all(Array.from({ length: 16 }, worker));
`,
      ],
    ]),
  // D. Index tailers and tracked files by device + inode instead of scanning
  // every one of them for every path at every rescan (O(files^2)).
  D: () =>
    edit('spool/spooler.js', [
      [
        '    constructor(o) {\n        this.o = o;\n',
        `    constructor(o) {
        this.o = o;
        // EXP D: indexes by dev:ino, kept up to date on every set/delete
        this.__idx = indexed(this.tailers, (t) => t.dev + ':' + t.ino);
        this.__fIdx = indexed(o.store.progress.files, (fp) => fp.meta.dev + ':' + fp.meta.ino);
`,
      ],
      [
        '    findTailer(dev, ino) {\n',
        `    findTailer(dev, ino) {
        let best;
        for (const t of this.__idx.get(dev + ':' + ino) ?? []) if (!best || t.gen > best.gen) best = t;
        return best;
    }
    __findTailerSlow(dev, ino) {
`,
      ],
      [
        '            for (const fp of store.progress.files.values()) {\n                const m = fp.meta;\n                if (m.dev !== dev || m.ino !== ino)',
        "            for (const fp of [...(this.__fIdx.get(dev + ':' + ino) ?? [])]) {\n                const m = fp.meta;\n                if (m.dev !== dev || m.ino !== ino)",
      ],
      [
        '            for (const fp of store.progress.files.values())\n',
        "            for (const fp of [...(this.__fIdx.get(dev + ':' + ino) ?? [])])\n",
      ],
      [
        'export class Spooler {',
        `function indexed(map, keyOf) {
    // EXP D: a secondary index of a Map's values (key -> Set of values)
    const idx = new Map();
    const add = (v) => { const k = keyOf(v); let s = idx.get(k); if (!s) idx.set(k, (s = new Set())); s.add(v); };
    const remove = (v) => { const k = keyOf(v); const s = idx.get(k); if (s) { s.delete(v); if (s.size === 0) idx.delete(k); } };
    for (const v of map.values()) add(v);
    const set = map.set.bind(map);
    const del = map.delete.bind(map);
    map.set = (k, v) => { const old = map.get(k); if (old) remove(old); set(k, v); add(v); return map; };
    map.delete = (k) => { const old = map.get(k); if (old) remove(old); return del(k); };
    return idx;
}
export class Spooler {`,
      ],
    ]),
  // E. The read loop calls read() on every tracked file every round, even at
  // end of file, and keeps every descriptor open for idle_ms. Read only files
  // the last scan saw grow (size > read offset, or detached), and give the
  // descriptor back at end of file.
  E: () =>
    edit('spool/spooler.js', [
      [
        '            if (t.finished)\n                continue;\n            await this.o.waitForRoom();',
        `            if (t.finished)
                continue;
            if (!t.detached && t.readOffset >= t.lastSize) {
                // EXP E: nothing known to read; the rescan or a watch event updates lastSize
                if (t.fh) await t.closeFd();
                continue;
            }
            await this.o.waitForRoom();`,
      ],
      [
        '            const n = await t.readOnce(this.buf, this.o.batcher);\n',
        `            const n = await t.readOnce(this.buf, this.o.batcher);
            // EXP E: give the descriptor back as soon as the known bytes are read
            if (n > 0 && !t.detached && t.readOffset >= t.lastSize && t.fh) await t.closeFd();\n`,
      ],
      [
        '                    const t = new FileTailer(m.key, m.ds, p, resume, dev, ino, m.gen, this.o.clock.now(), this.o.maxLineBytes);\n',
        '                    const t = new FileTailer(m.key, m.ds, p, resume, dev, ino, m.gen, this.o.clock.now(), this.o.maxLineBytes);\n                    t.lastSize = size; // EXP E\n                    t.lastMtimeMs = (await fh.stat()).mtimeMs; // EXP E: else the next scan sees a change and re-fingerprints (reopens) every file\n',
      ],
    ]),
};

rmSync(out, { recursive: true, force: true });
cpSync(path.join(root, 'dist'), out, { recursive: true });
for (const k of want) {
  if (!PATCHES[k]) throw new Error(`unknown patch ${k}; have ${Object.keys(PATCHES).join(',')}`);
  PATCHES[k]();
}
console.log(`dist-exp with patches ${want.join(',')} in ${out}`);
