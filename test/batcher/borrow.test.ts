// Reading into the open batch's own buffer (Batcher.borrow) must change
// nothing but the copies: the same batches (ids, bodies, line counts), the
// same claims (ranges, owners, CRCs) and the same dead letters as handing the
// same chunks over from a buffer of the reader's own, for any mix of lines
// (ordinary, empty, "\r\n", too long, longer than a learned size cap) and any
// cut into reads. Also: a buffer a read still fills is never handed to
// another batch.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Batcher, BORROW_MIN_BYTES, type ClosedBatch } from '../../src/batcher/batcher.js';
import { Progress } from '../../src/state/progress.js';

const file = { key: 'k', ds: 'ds', path: '/spool/ds.ndjson' };

function harness(o: { maxBytes: number; cap: number; maxLineBytes: number }) {
  const progress = new Progress();
  progress.addFile({ key: 'k', dev: 0, ino: 1, gen: 0, fp: '', fpLen: 0, path: file.path, ds: 'ds' }, 0);
  const claims: string[] = [];
  const closed: Array<{ id: number; body: string; lines: number }> = [];
  const dead: string[] = [];
  let id = 0;
  const batcher = new Batcher({
    progress: {
      claim: (key, start, end, owner, bytes) => {
        const e = progress.claim(key, start, end, owner, bytes);
        claims.push(`${start}-${end} owner ${owner}`);
        return e;
      },
    },
    batchIds: { newBatchId: () => ++id },
    now: () => 0,
    maxBytes: o.maxBytes,
    maxLineBytes: o.maxLineBytes,
    maxOpenBytes: 64 * 1024 * 1024,
    validateJson: false,
    sizeCaps: { capFor: () => o.cap },
    // The body is copied at once: the batch's buffer may be lent for the next read.
    onClose: (b: ClosedBatch) => closed.push({ id: b.id, body: b.body.toString('latin1'), lines: b.lines }),
    onDeadLetter: (d) => d && dead.push(`${d.offset} ${d.reason} ${d.bytes}`),
  });
  const crcs = () => [...(progress.files.get('k')?.entries ?? [])].map((e) => `${e.start}-${e.end} ${e.owner} ${e.crc}`);
  return { batcher, claims, closed, dead, crcs };
}

/** Feed `data` in reads of the given sizes, as the tailer does: whole lines handed over, the partial last one carried. */
function feed(h: ReturnType<typeof harness>, data: Buffer, reads: number[], borrow: boolean): number {
  const own = Buffer.alloc(data.length + 16);
  let carry = Buffer.alloc(0);
  let readAt = 0;
  let carryStart = 0;
  let borrowed = 0;
  for (let i = 0; readAt < data.length; i++) {
    const want = reads[i % reads.length]!;
    const lent = borrow ? h.batcher.borrow('ds', carry.length, data.length - readAt) : null;
    if (lent) borrowed++;
    const into = lent?.buf ?? own;
    const at = lent?.at ?? 0;
    const n = Math.min(want, data.length - readAt, (lent ? lent.room : own.length) - carry.length);
    carry.copy(into, at);
    data.copy(into, at + carry.length, readAt, readAt + n);
    readAt += n;
    const to = at + carry.length + n;
    const last = into.lastIndexOf(10, to - 1);
    if (last >= at) {
      h.batcher.append(file, into, at, last + 1, carryStart);
      carryStart += last + 1 - at;
      carry = Buffer.from(into.subarray(last + 1, to));
    } else {
      carry = Buffer.from(into.subarray(at, to));
    }
    if (lent) h.batcher.giveBack(lent);
  }
  h.batcher.closeAll();
  return borrowed;
}

/** The line rules written plainly, one line at a time (lines.ts): the batches' bodies and line counts. */
function oracle(lines: string[], o: { maxBytes: number; cap: number; maxLineBytes: number }): Array<{ body: string; lines: number }> {
  const out: Array<{ body: string; lines: number }> = [];
  let cur = { body: '', lines: 0 };
  for (const l of lines) {
    let content = l.slice(0, -1);
    if (content.endsWith('\r')) content = content.slice(0, -1);
    if (content.length === 0 || content.length > o.maxLineBytes || content.length + 1 > o.maxBytes) continue;
    if (cur.body.length + content.length + 1 > o.cap && cur.body.length > 0) {
      out.push(cur);
      cur = { body: '', lines: 0 };
    }
    cur.body += `${content}\n`;
    cur.lines++;
  }
  if (cur.lines > 0) out.push(cur);
  return out;
}

const line = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 300 }).map((n) => `{"a":"${'x'.repeat(n)}"}\n`) },
  { weight: 1, arbitrary: fc.constantFrom('\n', '\r\n', '{"cr":1}\r\n', 'x\ry\n') },
  { weight: 1, arbitrary: fc.integer({ min: 3_000, max: 9_000 }).map((n) => `${'L'.repeat(n)}\n`) },
);

describe('Batcher.borrow', () => {
  it('gives the same batches, claims, CRCs and dead letters as copying, for any lines and reads', () => {
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 400 }),
        fc.array(fc.integer({ min: 1, max: 200_000 }), { minLength: 1, maxLength: 5 }),
        fc.constantFrom(200_000, 50_000, 6_000),
        fc.constantFrom(8_000, 200_000),
        fc.boolean(),
        (mix, reads, cap, maxLineBytes, ordinaryOnly) => {
          // Ordinary lines only: every chunk takes appendPlain's shorter loop.
          const lines = ordinaryOnly ? mix.filter((l) => l.length > 1 && !l.includes('\r')) : mix;
          const data = Buffer.from(lines.join(''), 'latin1');
          const o = { maxBytes: 200_000, cap, maxLineBytes };
          const copied = harness(o);
          feed(copied, data, reads, false);
          const lent = harness(o);
          feed(lent, data, reads, true);
          expect(copied.closed.filter((b) => b.body !== '').map(({ body, lines }) => ({ body, lines }))).toEqual(oracle(lines, o));
          expect(lent.closed).toEqual(copied.closed);
          expect(lent.claims).toEqual(copied.claims);
          expect(lent.crcs()).toEqual(copied.crcs());
          expect(lent.dead).toEqual(copied.dead);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('lines moved left in a borrowed buffer (after an empty line, a "\\r\\n", a dead letter) keep the CRCs of the bytes as read', () => {
    const body = Array.from({ length: 20_000 }, (_, i) => `{"i":${i}}\n`).join('');
    for (const head of ['\n', '{"cr":1}\r\n', `${'L'.repeat(9_000)}\n`]) {
      const data = Buffer.from(head + body);
      const o = { maxBytes: 200_000, cap: 200_000, maxLineBytes: 8_000 };
      const copied = harness(o);
      feed(copied, data, [100_000], false);
      const lent = harness(o);
      expect(feed(lent, data, [100_000], true), 'reads borrowed').toBeGreaterThan(0);
      expect(lent.crcs(), JSON.stringify(head.slice(0, 12))).toEqual(copied.crcs());
      expect(lent.closed).toEqual(copied.closed);
    }
  });

  it('a batch fills to its cap exactly and never past it, in one plain chunk', () => {
    for (const [len, cap, first] of [
      [91, 1000, 10], // the 11th line would end one byte past the cap
      [100, 1000, 10], // the 10th line ends exactly at it
      [101, 1000, 9],
    ] as const) {
      const h = harness({ maxBytes: 200_000, cap, maxLineBytes: 200_000 });
      const data = Buffer.from(`${'z'.repeat(len - 1)}\n`.repeat(25));
      h.batcher.append(file, data, 0, data.length, 0);
      h.batcher.closeAll();
      expect(h.closed[0]!.lines, `lines of ${len} bytes, cap ${cap}`).toBe(first);
      expect(h.closed.reduce((n, b) => n + b.lines, 0)).toBe(25);
    }
  });

  it('a backlog is read into batch buffers: most reads are borrowed', () => {
    const data = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `{"i":${i},"pad":"${'p'.repeat(90)}"}\n`).join(''));
    const h = harness({ maxBytes: 400_000, cap: 400_000, maxLineBytes: 100_000 });
    const borrowed = feed(h, data, [BORROW_MIN_BYTES * 2], true);
    expect(borrowed).toBeGreaterThan(0);
    expect(h.closed.map((b) => b.body).join('')).toBe(data.toString());
  });

  it('a batch closed while its buffer is lent: the buffer does not go to the next batch until the read is over', () => {
    const h = harness({ maxBytes: 400_000, cap: 400_000, maxLineBytes: 100_000 });
    const bodies: Buffer[] = [];
    const first = Buffer.from(`${'a'.repeat(99)}\n`.repeat(2_000));
    h.batcher.append(file, first, 0, first.length, 0);
    // The next read is lent the open batch's buffer...
    const lent = h.batcher.borrow('ds', 0, 1_000_000)!;
    expect(lent.at).toBe(first.length);
    // ...and while it reads, linger_ms closes the batch, it is compressed and its buffer comes back.
    const batcher = h.batcher as unknown as { close(b: unknown): void; open: Map<string, unknown> };
    const open = batcher.open.get('ds');
    batcher.close(open);
    bodies.push(lent.buf.subarray(0, first.length));
    h.batcher.recycle(bodies[0]!);
    // Another Data Source's backlog now wants a fresh buffer: not the lent one.
    const other = h.batcher.borrow('other', 0, 1_000_000)!;
    expect(other.buf.buffer).not.toBe(lent.buf.buffer);
    h.batcher.giveBack(other);
    const second = Buffer.from(`${'b'.repeat(99)}\n`.repeat(1_000));
    second.copy(lent.buf, lent.at);
    h.batcher.append(file, lent.buf, lent.at, lent.at + second.length, first.length);
    h.batcher.giveBack(lent);
    h.batcher.closeAll();
    expect(h.closed.map((b) => b.body)).toEqual([first.toString(), second.toString()]);
  });
});
