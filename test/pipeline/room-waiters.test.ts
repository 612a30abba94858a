// The pipeline's room waiters (pipeline/room-waiters.ts): a wait ended by
// its signal (the reader's round, once a scan is due) leaves the list, so a
// batch's end wakes the reader still waiting, not a wait already over.
import { describe, expect, it } from 'vitest';
import { RoomWaiters } from '../../src/pipeline/room-waiters.js';

describe('RoomWaiters', () => {
  it('a wait ended by its signal leaves: the next batch end wakes the one still waiting', async () => {
    const w = new RoomWaiters();
    const ended: string[] = [];
    // Three rounds whose waits a due scan ended, then the reader waiting again.
    for (let i = 0; i < 3; i++) {
      const scanDue = new AbortController();
      const wait = w.wait(scanDue.signal).then(() => ended.push(`round ${i}`));
      scanDue.abort();
      await wait;
    }
    const reader = w.wait().then(() => ended.push('reader'));
    expect(w.size).toBe(1);
    w.wakeOne();
    await reader;
    expect(ended).toEqual(['round 0', 'round 1', 'round 2', 'reader']);
  });

  it('wakeAll wakes every waiter, wakeOne the longest waiting', async () => {
    const w = new RoomWaiters();
    const order: number[] = [];
    const waits = [0, 1, 2].map((i) => w.wait().then(() => order.push(i)));
    w.wakeOne();
    await waits[0];
    expect(order).toEqual([0]);
    w.wakeAll();
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2]);
    expect(w.size).toBe(0);
  });
});
