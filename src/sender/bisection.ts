// The 400 bisection (README "How each server answer is handled"): a batch
// refused with a 400 is cut in halves at line boundaries until the bad lines
// are isolated. While nothing of the batch is accepted, single lines
// rejected from REQUEST_LEVEL_QUARTERS different quarters of it, or
// PROBE_BUDGET requests spent, make the refusal the request's own (the Data
// Source name, the token's scope): the sender parks the Data Source instead
// of dead-lettering good lines. Pieces from quarters with no rejected line yet
// go first, so a request-level problem shows in O(log n) requests.
//
// The episode is logged once at its start and once at its end, with totals
// (the requests in between log nothing).
import { decodeBody, type Codec } from '../codec/index.js';
import { bodyBytes } from './body.js';
import type { BisectionEvent, DeliveryCtx, DeliveryResult, Part, RootBatch } from './types.js';

/** 400 bisection: requests one batch may spend isolating bad lines, while none of it is accepted, before the problem counts as request-level. */
export const PROBE_BUDGET = 64;
/** 400: single lines rejected from this many different quarters of a batch, with nothing accepted, make the problem request-level. */
export const REQUEST_LEVEL_QUARTERS = 3;

/** The piece's lines, decompressed. */
export async function rawOf(part: Part): Promise<Buffer> {
  const bytes = await bodyBytes(part.body);
  return part.encoding ? decodeBody(part.encoding, bytes) : bytes;
}

/** Halves at the line boundary nearest the middle. */
export async function split(part: Part, raw: Buffer, codec: Codec): Promise<[Part, Part]> {
  const mid = raw.length >> 1;
  let cut = raw.lastIndexOf(10, mid - 1) + 1;
  if (cut <= 0 || cut >= raw.length) cut = raw.indexOf(10, mid) + 1;
  const left = raw.subarray(0, cut);
  const right = raw.subarray(cut);
  const leftLines = countLines(left);
  const [lb, rb] = await Promise.all([codec.compress(left), codec.compress(right)]);
  const encoding = codec.contentEncoding;
  return [
    { ds: part.ds, body: lb, encoding, rawLen: left.length, lines: leftLines, lineStart: part.lineStart },
    { ds: part.ds, body: rb, encoding, rawLen: right.length, lines: part.lines - leftLines, lineStart: part.lineStart + leftLines },
  ];
}

/** The next piece: depth first, left to right; while nothing is accepted, a piece reaching an unexplored quarter first. */
export function nextPart(work: Part[], ctx: DeliveryCtx): Part {
  if (!ctx.accepted && ctx.rejectedQuarters.size > 0) {
    let best = -1;
    for (let i = work.length - 1; i >= 0; i--) {
      const p = work[i]!;
      const [first, last] = [quarterOf(ctx.root, p.lineStart), quarterOf(ctx.root, p.lineStart + p.lines - 1)];
      let fresh = false;
      for (let q = first; q <= last; q++) if (!ctx.rejectedQuarters.has(q)) fresh = true;
      if (fresh && (best === -1 || p.lines < work[best]!.lines)) best = i;
    }
    if (best !== -1) return work.splice(best, 1)[0]!;
  }
  return work.pop()!;
}

/**
 * A single line refused with a 400: held until the batch is known not to be
 * a request-level problem; 'request_level' when it is one.
 */
export function rejectLine(ctx: DeliveryCtx, part: Part, raw: Buffer): 'request_level' | null {
  ctx.rejectedQuarters.add(quarterOf(ctx.root, part.lineStart));
  ctx.pendingRejects.push({ part, raw });
  return !ctx.accepted && ctx.rejectedQuarters.size >= REQUEST_LEVEL_QUARTERS ? 'request_level' : null;
}

/** The lines isolated so far, in batch order, to be written to the dead-letter store together. */
export function takeRejects(ctx: DeliveryCtx): Array<{ part: Part; raw: Buffer }> {
  return ctx.pendingRejects.splice(0).sort((a, b) => a.part.lineStart - b.part.lineStart);
}

/** A 400 for a piece of several lines: the episode's start event the first time, null after. */
export function startEpisode(ctx: DeliveryCtx, part: Part): BisectionEvent | null {
  if (ctx.bisecting) return null;
  ctx.bisecting = true;
  return { phase: 'start', batchId: ctx.root.id, ds: part.ds, lines: ctx.root.lines, rawBytes: ctx.root.rawLen };
}

/** One event at the end of a 400 episode, with its totals; null when the delivery did not bisect. */
export function endEpisode(ctx: DeliveryCtx, outcome: DeliveryResult | 'request_level'): BisectionEvent | null {
  if (!ctx.bisecting) return null;
  const { root } = ctx;
  return { phase: 'end', batchId: root.id, ds: root.ds, outcome, requests: ctx.probes + 1, linesAcked: ctx.linesAcked, linesDeadLettered: ctx.linesDeadLettered };
}

export function quarterOf(root: RootBatch, line: number): number {
  return Math.min(3, Math.floor((line * 4) / Math.max(1, root.lines)));
}

export function countLines(buf: Buffer): number {
  let n = 0;
  let pos = buf.indexOf(10);
  while (pos !== -1) {
    n++;
    pos = buf.indexOf(10, pos + 1);
  }
  return n;
}
