// The graceful stop ends within shutdown_timeout_ms whatever a part does
// (SPEC section 1, `run`): a part whose close never ends (a connection
// still being opened through a proxy that never answers) must not keep the
// stop, and so the process, waiting.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { StopSequence, type RunningParts } from '../../src/agent/stop.js';
import { systemClock } from '../../src/util/clock.js';

const ends = { close: async () => undefined, destroy: async () => undefined };

function parts(unwind: RunningParts['started']['unwind']): RunningParts {
  return {
    stopTimers: () => undefined,
    control: null,
    spooler: { ...ends, stopReading: async () => undefined },
    batcher: { closeAll: () => undefined },
    resender: ends,
    pipeline: { ...ends, drainUntil: async () => true },
    sender: { ...ends, inFlight: { longestRecentAnswerMs: 0 } },
    replayer: ends,
    client: ends,
    persist: async () => undefined,
    started: { unwind },
    flushLogs: () => undefined,
  };
}

function logger(): { log: pino.Logger; events: () => Array<Record<string, unknown>> } {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) });
  return { log, events: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('StopSequence.graceful', () => {
  it('a part that never ends does not hold the stop: it ends by the deadline (plus a short grace), saying so', async () => {
    const { log, events } = logger();
    const stop = new StopSequence({ clock: systemClock, log, stateDir: '/state' });
    // Without the bound this never resolves (the test times out).
    await stop.graceful(
      parts(() => new Promise(() => undefined)),
      400,
      false,
    );
    expect(events().map((e) => e.event)).toEqual(['stopping', 'stop_step_failed', 'stopped']);
    expect(events()[1]).toMatchObject({ part: 'unwind' });
  });

  it('parts that end: each step once, no failure', async () => {
    const { log, events } = logger();
    const stop = new StopSequence({ clock: systemClock, log, stateDir: '/state' });
    const how: unknown[] = [];
    await stop.graceful(
      parts(async (h) => {
        how.push(h);
        return [];
      }),
      400,
      false,
    );
    expect(how).toEqual(['close']);
    expect(events().map((e) => e.event)).toEqual(['stopping', 'stopped']);
  });
});
