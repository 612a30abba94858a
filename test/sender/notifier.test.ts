// Many batches back off on one Notifier during an outage: no "possible
// EventTarget memory leak" warning on stderr, and one notify wakes them all.
import { afterEach, describe, expect, it } from 'vitest';
import { Notifier } from '../../src/sender/notifier.js';
import { systemClock } from '../../src/util/clock.js';

const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);
afterEach(() => {
  process.off('warning', onWarning);
});

describe('Notifier', () => {
  it('wakes 50 concurrent waiters at once, without a max-listeners warning', async () => {
    process.on('warning', onWarning);
    const n = new Notifier();
    let woke = 0;
    const waits = Array.from({ length: 50 }, () => n.wait(systemClock, 60_000).then(() => woke++));
    n.notify();
    await Promise.all(waits);
    await new Promise((r) => setImmediate(r)); // warnings are emitted on a later tick
    expect(woke).toBe(50);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
