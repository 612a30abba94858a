// The acker on a manual clock: one retry period for every state write and
// for the journal's group commit, one fault set for /readyz and the parked
// gauge, and the checkpoint's timing.
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log.js';
import { Acker, CHECKPOINT_EVERY_MS, CHECKPOINT_JOURNAL_BYTES, CHECKPOINT_JOURNAL_SHARE, CHECKPOINT_MAX_EVERY_MS, CHECKPOINT_QUIET_MS, STATE_RETRY_MS, type CheckpointedState } from '../../src/state/acker.js';
import { ManualClock } from '../support/manual-clock.js';
import { systemClock } from '../../src/util/clock.js';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: test`), { code });
}

/** One tick of the agent, then its checkpoint (if any) has run. */
async function tick(s: { acker: Acker }): Promise<void> {
  s.acker.tick();
  await settle();
}

/** Let promise callbacks run (no time passes on the manual clock). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

function setup(state: Partial<CheckpointedState> & { journalBytes?: number; checkpointBytes?: number } = {}) {
  const clock = new ManualClock();
  const events: Array<Record<string, unknown>> = [];
  const logAt = (level: string) => (o: Record<string, unknown>) => events.push({ level, ...o });
  const log = { info: logAt('info'), warn: logAt('warn'), error: logAt('error') } as unknown as Logger;
  const faultSets: string[][] = [];
  const fatals: unknown[] = [];
  const store = {
    journalBytes: state.journalBytes ?? 0,
    checkpointBytes: state.checkpointBytes ?? 0,
    flush: state.flush ?? (async () => undefined),
    checkpoint: state.checkpoint ?? (async () => undefined),
  };
  const acker = new Acker(store, {
    clock,
    log,
    stateDir: '/state',
    events: { onFaultsChange: (f) => faultSets.push([...f].sort()), onFatal: (err) => fatals.push(err) },
  });
  return { clock, acker, store, events, faultSets, fatals };
}

/** A checkpoint of 20,000 files. */
const BIG_CHECKPOINT = 6_000_000;

/** An acker whose last checkpoint is BIG_CHECKPOINT, written CHECKPOINT_MAX_EVERY_MS after the store's start-up one. */
async function largeStateCheckpointedOnce() {
  let checkpoints = 0;
  const s = setup({ checkpointBytes: BIG_CHECKPOINT, journalBytes: 10, checkpoint: async () => void checkpoints++ });
  s.clock.advance(CHECKPOINT_MAX_EVERY_MS);
  await tick(s);
  expect(checkpoints, 'anything journaled is compacted within CHECKPOINT_MAX_EVERY_MS').toBe(1);
  return { s, checkpoints: () => checkpoints };
}

describe('Acker', () => {
  it('retries a state write every STATE_RETRY_MS while the disk is full, reports disk_full once and clears it when the write works', async () => {
    const s = setup();
    let calls = 0;
    const write = s.acker.retryStateWrite(async () => {
      calls++;
      if (calls <= 2) throw errno('ENOSPC');
      return 'stored';
    });
    await settle();
    expect(calls).toBe(1);
    expect(s.acker.faults).toEqual(['disk_full']);
    expect(s.clock.nextWakeInMs()).toBe(STATE_RETRY_MS);
    s.clock.advance(STATE_RETRY_MS - 1);
    await settle();
    expect(calls, 'not tried again before the period').toBe(1);
    s.clock.advance(1);
    await settle();
    expect(calls).toBe(2);
    s.clock.advance(STATE_RETRY_MS);
    expect(await write).toBe('stored');
    expect(calls).toBe(3);
    expect(s.acker.faults).toEqual([]);
    expect(s.faultSets).toEqual([['disk_full'], []]);
    expect(s.events.filter((e) => e.event === 'state_fault')).toEqual([expect.objectContaining({ level: 'error', fault: 'disk_full', state_dir: '/state' })]);
    expect(s.events.filter((e) => e.event === 'state_fault_cleared')).toHaveLength(1);
  });

  it('a write that only worked in memory does not clear a fault another write raised', async () => {
    const s = setup();
    let full = true;
    const stuck = s.acker.retryStateWrite(async () => {
      if (full) throw errno('EROFS');
    });
    await settle();
    expect(s.acker.faults).toEqual(['state_dir_unwritable']);
    await s.acker.retryStateWrite(async () => 'in memory');
    expect(s.acker.faults).toEqual(['state_dir_unwritable']);
    full = false;
    s.clock.advance(STATE_RETRY_MS);
    await stuck;
    expect(s.acker.faults).toEqual([]);
  });

  it('destroy ends a write waiting out a full disk at once (DestroyedError), without waiting for its next try', async () => {
    const s = setup();
    let calls = 0;
    const write = s.acker.retryStateWrite(async () => {
      calls++;
      throw errno('ENOSPC');
    });
    const ended = write.then(
      () => 'stored',
      (err: Error) => err.name,
    );
    await settle();
    expect(s.clock.waiting).toBe(1);
    await s.acker.destroy();
    // No time passes on the clock: the stop that destroyed it must not find it still waiting afterwards.
    expect(await ended).toBe('DestroyedError');
    expect(calls).toBe(1);
    expect(s.clock.waiting).toBe(0);
  });

  it('hundreds of writes waiting out a full disk together (spills of the bodies in flight) print no MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      // The real clock: its sleep listens on the acker's abort signal, once per waiting write.
      const acker = new Acker(
        { journalBytes: 0, checkpointBytes: 0, flush: async () => undefined, checkpoint: async () => undefined },
        { clock: systemClock, log: { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger, stateDir: '/state', events: { onFaultsChange: () => undefined, onFatal: () => undefined } },
      );
      const writes = Array.from({ length: 200 }, () => acker.retryStateWrite(async () => Promise.reject(errno('ENOSPC'))).catch((err: Error) => err.name));
      await settle();
      await acker.destroy();
      expect(new Set(await Promise.all(writes))).toEqual(new Set(['DestroyedError']));
      await settle();
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it('any other write error is thrown, not retried', async () => {
    const s = setup();
    await expect(s.acker.retryStateWrite(async () => Promise.reject(errno('EIO')))).rejects.toThrow('EIO');
    expect(s.acker.faults).toEqual([]);
    expect(s.clock.waiting).toBe(0);
  });

  it('a failed group commit is flushed again on the same period; an error that is not a full or unwritable disk is fatal', async () => {
    let flushes = 0;
    let failing = true;
    const s = setup({
      flush: async () => {
        flushes++;
        if (failing) throw errno('ENOSPC');
      },
    });
    s.acker.journalFailed(errno('ENOSPC'));
    s.acker.journalFailed(errno('ENOSPC'));
    expect(s.acker.faults).toEqual(['disk_full']);
    expect(s.clock.waiting, 'one retry pending, however many commits failed').toBe(1);
    s.clock.advance(STATE_RETRY_MS);
    await settle();
    expect(flushes).toBe(1);
    expect(s.acker.faults).toEqual(['disk_full']);
    failing = false;
    s.clock.advance(STATE_RETRY_MS);
    await settle();
    expect(flushes).toBe(2);
    expect(s.acker.faults).toEqual([]);
    expect(s.fatals).toEqual([]);
    s.acker.journalFailed(errno('EIO'));
    expect(s.fatals).toHaveLength(1);
  });

  it('checkpoints when something was journaled, at most every CHECKPOINT_EVERY_MS from the start-up one, sooner past CHECKPOINT_JOURNAL_BYTES', async () => {
    let checkpoints = 0;
    const s = setup({ checkpoint: async () => void checkpoints++ });
    s.clock.advance(CHECKPOINT_EVERY_MS);
    await tick(s);
    expect(checkpoints, 'nothing journaled: nothing to compact').toBe(0);
    const fresh = setup({ journalBytes: 100, checkpoint: async () => void checkpoints++ });
    await tick(fresh);
    fresh.clock.advance(CHECKPOINT_EVERY_MS - 1);
    await tick(fresh);
    expect(checkpoints, 'the store wrote one as it loaded: the first ticks with something journaled do not rewrite it').toBe(0);
    fresh.clock.advance(1);
    await tick(fresh);
    expect(checkpoints).toBe(1);
    fresh.clock.advance(CHECKPOINT_EVERY_MS - 1);
    await tick(fresh);
    expect(checkpoints).toBe(1);
    fresh.clock.advance(1);
    await tick(fresh);
    expect(checkpoints).toBe(2);
    fresh.store.journalBytes = CHECKPOINT_JOURNAL_BYTES + 1;
    await tick(fresh);
    expect(checkpoints, 'the journals passed their bound').toBe(3);
  });

  it('with a large state (20,000 files), waits until the journals hold a share of the last checkpoint, or CHECKPOINT_MAX_EVERY_MS', async () => {
    const { s, checkpoints } = await largeStateCheckpointedOnce();
    s.store.journalBytes = 100_000;
    s.clock.advance(CHECKPOINT_EVERY_MS);
    await tick(s);
    expect(checkpoints(), 'a 6 MB rewrite for 100 KB of journal waits').toBe(1);
    s.store.journalBytes = Math.ceil(BIG_CHECKPOINT * CHECKPOINT_JOURNAL_SHARE);
    await tick(s);
    expect(checkpoints(), 'the journals hold their share of the checkpoint').toBe(2);
    s.store.journalBytes = 10;
    s.clock.advance(CHECKPOINT_MAX_EVERY_MS - 1);
    await tick(s);
    expect(checkpoints()).toBe(2);
    s.clock.advance(1);
    await tick(s);
    expect(checkpoints(), 'anything journaled is compacted within CHECKPOINT_MAX_EVERY_MS').toBe(3);
  });

  it('with a large state, compacts once the journals stop growing (a backlog is done), not while they grow', async () => {
    const { s, checkpoints } = await largeStateCheckpointedOnce();
    // A trickle: the journals grow a little every second, far below their share.
    for (let i = 1; i <= 30; i++) {
      s.store.journalBytes = i * 100;
      s.clock.advance(1000);
      await tick(s);
    }
    expect(checkpoints(), 'growing journals below their share wait').toBe(1);
    s.clock.advance(CHECKPOINT_QUIET_MS - 1000);
    await tick(s);
    expect(checkpoints(), 'not quiet for long enough yet').toBe(1);
    s.clock.advance(1000);
    await tick(s);
    expect(checkpoints(), 'quiet for CHECKPOINT_QUIET_MS: compacted').toBe(2);
    s.store.journalBytes = 0;
    s.clock.advance(CHECKPOINT_MAX_EVERY_MS);
    await tick(s);
    expect(checkpoints(), 'nothing new: nothing to compact').toBe(2);
  });

  it('a checkpoint on a full disk is a fault until a checkpoint works, even with nothing new journaled', async () => {
    let full = true;
    const s = setup({
      journalBytes: 10,
      checkpoint: async () => {
        if (full) throw errno('ENOSPC');
      },
    });
    s.clock.advance(CHECKPOINT_EVERY_MS);
    s.acker.tick();
    await settle();
    expect(s.acker.faults).toEqual(['disk_full']);
    // Retried every CHECKPOINT_EVERY_MS, said once (one event per state change, not one per retry).
    for (let i = 0; i < 3; i++) {
      s.clock.advance(CHECKPOINT_EVERY_MS);
      s.acker.tick();
      await settle();
    }
    expect(s.events.map((e) => e.event)).toEqual(['checkpoint_fault']);
    expect(s.events[0]).toMatchObject({ level: 'error', fault: 'disk_full', err: 'Error: ENOSPC: test' });
    s.store.journalBytes = 0;
    full = false;
    s.clock.advance(CHECKPOINT_EVERY_MS);
    s.acker.tick();
    await settle();
    expect(s.acker.faults).toEqual([]);
    expect(s.events.some((e) => e.event === 'checkpoint_fault_cleared')).toBe(true);
  });

  it('a checkpoint failing with any other error (EIO from fsync) is fatal, not retried', async () => {
    let tries = 0;
    const s = setup({
      journalBytes: 10,
      checkpoint: async () => {
        tries++;
        throw errno('EIO');
      },
    });
    s.clock.advance(CHECKPOINT_EVERY_MS);
    await tick(s);
    expect(s.fatals.map((e) => (e as NodeJS.ErrnoException).code), 'SPEC section 3: any other fsync error is fatal').toEqual(['EIO']);
    expect(s.acker.faults).toEqual([]);
    s.clock.advance(CHECKPOINT_EVERY_MS);
    await tick(s);
    expect(tries, 'a fatal checkpoint error is not tried again').toBe(1);
  });

  it('the same fault from a write and from the checkpoint is one reason; it clears when both have worked', async () => {
    let full = true;
    const s = setup({
      journalBytes: 10,
      checkpoint: async () => {
        if (full) throw errno('ENOSPC');
      },
    });
    const write = s.acker.retryStateWrite(async () => {
      if (full) throw errno('ENOSPC');
    });
    s.clock.advance(CHECKPOINT_EVERY_MS);
    s.acker.tick();
    await settle();
    expect(s.acker.faults).toEqual(['disk_full']);
    full = false;
    s.clock.advance(STATE_RETRY_MS);
    await write;
    expect(s.acker.faults, 'the checkpoint has not worked yet').toEqual(['disk_full']);
    s.clock.advance(CHECKPOINT_EVERY_MS);
    s.acker.tick();
    await settle();
    expect(s.acker.faults).toEqual([]);
  });

  it('close cancels a pending flush retry and stops checkpointing', async () => {
    let flushes = 0;
    let checkpoints = 0;
    const s = setup({ journalBytes: 10, flush: async () => void flushes++, checkpoint: async () => void checkpoints++ });
    s.acker.journalFailed(errno('ENOSPC'));
    await s.acker.close();
    expect(s.clock.waiting).toBe(0);
    s.clock.advance(STATE_RETRY_MS);
    s.acker.tick();
    await settle();
    expect({ flushes, checkpoints }).toEqual({ flushes: 0, checkpoints: 0 });
  });
});
