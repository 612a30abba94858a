// A start waits out a full or read-only state_dir (src/agent/state-wait.ts):
// each failed try is undone, the fault is reported once per change, the next
// try comes STATE_RETRY_MS later on the clock, and a stop ends the wait.
// The real thing on a real tmpfs: test/process/state-disk.test.ts.
import { describe, expect, it } from 'vitest';
import { openWaitingForStateDir, StartStoppedError } from '../../src/agent/state-wait.js';
import { StartedParts, partOf } from '../../src/agent/lifecycle.js';
import { STATE_RETRY_MS } from '../../src/state/acker.js';
import { ManualClock } from '../support/manual-clock.js';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: open '/state/checkpoint.json.tmp'`), { code, syscall: 'open' });
}

/** Lets the wait run until it sleeps (or ends). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe('a start waiting for its state_dir', () => {
  it('undoes each failed try, reports each change of fault once, tries again every STATE_RETRY_MS, and clears the fault when a try works', async () => {
    const clock = new ManualClock();
    const parts = new StartedParts();
    parts.add('admin server', partOf(() => undefined));
    const fails = [errno('ENOSPC'), errno('ENOSPC'), errno('EROFS')];
    const events: string[] = [];
    let tries = 0;
    const open = async (): Promise<void> => {
      tries++;
      parts.add('state_dir lock', partOf(() => events.push(`lock released (try ${tries})`)));
      const err = fails.shift();
      if (err) throw err;
    };
    let done = false;
    const waiting = openWaitingForStateDir(open, {
      clock,
      undo: async (err) => void (await parts.unwind({ destroy: err }, 1)),
      onFault: (fault, err) => events.push(`fault ${fault} ${(err as NodeJS.ErrnoException | undefined)?.code ?? ''}`.trim()),
    }).then(() => (done = true));
    await settle();
    expect(tries).toBe(1);
    expect(events).toEqual(['lock released (try 1)', 'fault disk_full ENOSPC']);
    clock.advance(STATE_RETRY_MS - 1);
    await settle();
    expect(tries, 'not before STATE_RETRY_MS').toBe(1);
    clock.advance(1);
    await settle();
    // The same fault again: undone, not reported again.
    expect(tries).toBe(2);
    expect(events.slice(2)).toEqual(['lock released (try 2)']);
    clock.advance(STATE_RETRY_MS);
    await settle();
    expect(events.slice(3)).toEqual(['lock released (try 3)', 'fault state_dir_unwritable EROFS']);
    clock.advance(STATE_RETRY_MS);
    await waiting;
    expect(done).toBe(true);
    expect(tries).toBe(4);
    expect(events.slice(5)).toEqual(['fault null']);
    // The admin server and the last try's parts are up; every failed try's lock was released.
    expect(parts.names).toEqual(['admin server', 'state_dir lock']);
  });

  it('throws any other error at once, without waiting', async () => {
    const clock = new ManualClock();
    const other = errno('EMFILE');
    const faults: unknown[] = [];
    await expect(
      openWaitingForStateDir(
        async () => {
          throw other;
        },
        { clock, undo: async () => undefined, onFault: (f) => faults.push(f) },
      ),
    ).rejects.toBe(other);
    expect(faults).toEqual([]);
    expect(clock.waiting).toBe(0);
  });

  it('ends with StartStoppedError when a stop comes during the wait', async () => {
    const clock = new ManualClock();
    const stop = new AbortController();
    let tries = 0;
    const waiting = openWaitingForStateDir(
      async () => {
        tries++;
        throw errno('ENOSPC');
      },
      { clock, signal: stop.signal, undo: async () => undefined, onFault: () => undefined },
    );
    await settle();
    expect(clock.waiting).toBe(1);
    stop.abort();
    await expect(waiting).rejects.toBeInstanceOf(StartStoppedError);
    expect(tries).toBe(1);
  });
});
