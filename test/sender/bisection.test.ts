// The 400 bisection's helpers (sender/bisection.ts): halves at line
// boundaries, unexplored quarters first while nothing is accepted, and single
// rejected lines from REQUEST_LEVEL_QUARTERS quarters make the refusal the
// request's own.
import { describe, expect, it } from 'vitest';
import { createCodec } from '../../src/codec/index.js';
import { REQUEST_LEVEL_QUARTERS, countLines, endEpisode, nextPart, rawOf, rejectLine, split, startEpisode } from '../../src/sender/bisection.js';
import type { DeliveryCtx, Part, RootBatch } from '../../src/sender/types.js';

const codec = createCodec('zstd', 3);

function batch(n: number): { root: RootBatch; raw: Buffer } {
  const raw = Buffer.from(Array.from({ length: n }, (_, i) => `{"k":${i}}\n`).join(''));
  return { raw, root: { id: 1, ds: 'ds', body: raw, encoding: null, rawLen: raw.length, lines: n } };
}

function ctx(root: RootBatch): DeliveryCtx {
  return { root, opts: {}, bisecting: false, probes: 0, linesAcked: 0, linesDeadLettered: 0, accepted: false, rejectedQuarters: new Set(), pendingRejects: [], holdsDsProbe: false, unknownOutcome: false, ac: new AbortController(), released: false, releasedLines: 0, result: null, since: 0 };
}

function part(root: RootBatch, lineStart: number, lines: number): Part {
  return { ds: root.ds, body: Buffer.alloc(0), encoding: null, rawLen: lines, lines, lineStart };
}

describe('bisection', () => {
  it('splits at the line boundary nearest the middle; the halves hold every line once, in order', async () => {
    const { root, raw } = batch(7);
    const whole: Part = { ...root, lineStart: 0 };
    const [a, b] = await split(whole, await rawOf(whole), codec);
    expect([a.lines, b.lines]).toEqual([3, 4]);
    expect([a.lineStart, b.lineStart]).toEqual([0, 3]);
    expect(Buffer.concat([await rawOf(a), await rawOf(b)]).equals(raw)).toBe(true);
    expect(countLines(await rawOf(b))).toBe(4);
  });

  it('while nothing is accepted, the smallest piece reaching a quarter with no rejected line goes first', () => {
    const { root } = batch(16);
    const c = ctx(root);
    c.rejectedQuarters.add(0);
    const work = [part(root, 8, 8), part(root, 4, 4), part(root, 0, 2)];
    expect(nextPart(work, c).lineStart).toBe(4);
    c.accepted = true;
    expect(nextPart(work, c).lineStart, 'once something is accepted: depth first').toBe(0);
  });

  it(`single lines rejected from ${REQUEST_LEVEL_QUARTERS} quarters with nothing accepted make the refusal request-level`, () => {
    const { root } = batch(16);
    const c = ctx(root);
    expect(rejectLine(c, part(root, 0, 1), Buffer.from('a\n'))).toBeNull();
    expect(rejectLine(c, part(root, 1, 1), Buffer.from('b\n')), 'the same quarter again').toBeNull();
    expect(rejectLine(c, part(root, 4, 1), Buffer.from('c\n'))).toBeNull();
    expect(rejectLine(c, part(root, 15, 1), Buffer.from('d\n'))).toBe('request_level');
    expect(c.pendingRejects).toHaveLength(4);
  });

  it('with something accepted, rejected lines stay line-level', () => {
    const { root } = batch(16);
    const c = ctx(root);
    c.accepted = true;
    for (const line of [0, 4, 8, 12]) expect(rejectLine(c, part(root, line, 1), Buffer.from('x\n'))).toBeNull();
  });

  it('the episode starts once and ends with its totals; a delivery that never bisected raises nothing', () => {
    const { root } = batch(16);
    const c = ctx(root);
    expect(endEpisode(c, 'done')).toBeNull();
    expect(startEpisode(c, part(root, 0, 16))).toEqual({ phase: 'start', batchId: 1, ds: 'ds', lines: 16, rawBytes: root.rawLen });
    expect(startEpisode(c, part(root, 0, 8))).toBeNull();
    Object.assign(c, { probes: 5, linesAcked: 15, linesDeadLettered: 1 });
    expect(endEpisode(c, 'done')).toEqual({ phase: 'end', batchId: 1, ds: 'ds', outcome: 'done', requests: 6, linesAcked: 15, linesDeadLettered: 1 });
  });
});
