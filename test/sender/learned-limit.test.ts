// The 413 learned limit (sender/learned-limit.ts) on a manual clock: half the
// rejected size at once, never below the floor, 10 % back per 5 minutes up to
// max_bytes, and a piece over it cut only while nothing of it can be stored.
import { describe, expect, it } from 'vitest';
import { LEARNED_GROWTH_PERIOD_MS, LearnedLimit, MIN_LEARNED_BYTES } from '../../src/sender/learned-limit.js';
import type { Verdict } from '../../src/sender/retry-policy.js';
import { ManualClock } from '../support/manual-clock.js';
import { BudgetMemory } from '../../src/sender/budget-memory.js';

function limit(maxBytes = 1_000_000) {
  const clock = new ManualClock();
  const changes: number[] = [];
  let lowered = 0;
  const l = new LearnedLimit({ clock, maxBytes, onLower: () => lowered++, onChange: (b) => changes.push(b) });
  return { clock, l, changes, lowered: () => lowered };
}

const fresh = { opts: { neverSent: true }, unknownOutcome: false };

describe('LearnedLimit', () => {
  it('is max_bytes until a 413, and nothing is reported', () => {
    const { l, changes } = limit();
    expect(l.capFor()).toBe(1_000_000);
    expect(changes).toEqual([]);
  });

  it('a 413 drops it to half the rejected size at once, and narrows to one request at a time', () => {
    const { l, changes, lowered } = limit();
    l.lower(300_001);
    expect(l.capFor()).toBe(150_000);
    expect(changes).toEqual([150_000]);
    expect(lowered()).toBe(1);
  });

  it('a reload\'s new limit on the same memory keeps what was learned and its growth, and tells it', () => {
    const clock = new ManualClock();
    const memory = new BudgetMemory('http://api');
    const old = new LearnedLimit({ clock, maxBytes: 1_000_000, onLower: () => undefined, onChange: () => undefined, memory });
    old.lower(200_000);
    clock.advance(LEARNED_GROWTH_PERIOD_MS);
    const changes: number[] = [];
    const next = new LearnedLimit({ clock, maxBytes: 1_000_000, onLower: () => undefined, onChange: (b) => changes.push(b), memory });
    expect(next.capFor()).toBe(110_000);
    expect(changes).toEqual([110_000]);
  });

  it('a 413 for a body larger than the learned limit does not raise it (in flight before it was learned)', () => {
    const { l } = limit();
    l.lower(100_000);
    l.lower(800_000);
    expect(l.capFor()).toBe(50_000);
  });

  it('never below its floor, however small the rejected body', () => {
    const { l, changes } = limit();
    l.lower(100);
    expect(l.capFor()).toBe(MIN_LEARNED_BYTES);

    l.lower(MIN_LEARNED_BYTES);
    expect(l.capFor()).toBe(MIN_LEARNED_BYTES);
    expect(changes).toEqual([MIN_LEARNED_BYTES, MIN_LEARNED_BYTES]);
    // Below batch.max_bytes' 1 KB minimum too: a server may take less (the emulator's --max-body 1000).
    const small = limit();
    small.l.lower(1000);
    expect(small.l.capFor()).toBe(500);
  });

  it('grows back 10 % per whole 5 minutes without a 413, up to max_bytes, where it is forgotten', () => {
    const { clock, l, changes } = limit(200_000);
    l.lower(200_000);
    expect(l.capFor()).toBe(100_000);
    clock.advance(LEARNED_GROWTH_PERIOD_MS - 1);
    expect(l.capFor(), 'not before a whole period').toBe(100_000);
    clock.advance(1);
    expect(l.capFor()).toBe(110_000);
    clock.advance(LEARNED_GROWTH_PERIOD_MS);
    expect(l.capFor()).toBe(Math.floor(100_000 * 1.1 ** 2));
    // 1.1^8 = 2.14: max_bytes is reached within 8 periods of the 413.
    clock.advance(6 * LEARNED_GROWTH_PERIOD_MS);
    expect(l.capFor()).toBe(200_000);
    // Each step is told (the gauge spoolship_learned_max_body_bytes follows the growth), once.
    expect(changes).toEqual([100_000, 110_000, Math.floor(100_000 * 1.1 ** 2), 200_000]);
    clock.advance(10 * LEARNED_GROWTH_PERIOD_MS);
    expect(l.capFor()).toBe(200_000);
    expect(changes, 'max_bytes again is reported once').toEqual([100_000, 110_000, Math.floor(100_000 * 1.1 ** 2), 200_000]);
  });

  it('a new 413 restarts the growth from half its body', () => {
    const { clock, l } = limit();
    l.lower(200_000);
    clock.advance(2 * LEARNED_GROWTH_PERIOD_MS);
    expect(l.capFor()).toBe(121_000);
    l.lower(100_000);
    expect(l.capFor()).toBe(50_000);
    clock.advance(LEARNED_GROWTH_PERIOD_MS);
    expect(l.capFor()).toBe(55_000);
  });

  it('a piece over it is cut before it is sent, only while nothing of its batch can have been stored', () => {
    const { l } = limit();
    const big = { lines: 10, rawLen: 60_000 };
    expect(l.overLearned(big, fresh), 'nothing learned yet').toBe(false);
    l.lower(100_000);
    expect(l.overLearned(big, fresh)).toBe(true);
    expect(l.overLearned({ lines: 10, rawLen: 50_000 }, fresh), 'at the limit').toBe(false);
    expect(l.overLearned({ lines: 1, rawLen: 60_000 }, fresh), 'a single line cannot be cut').toBe(false);
    expect(l.overLearned(big, { opts: {}, unknownOutcome: false }), 'sent before (queued, re-formed)').toBe(false);
    expect(l.overLearned(big, { opts: { neverSent: true }, unknownOutcome: true }), 'an attempt may have stored it').toBe(false);
  });
});
