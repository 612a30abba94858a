// Every fault kind selected both ways: `every: 2` and `p: 0.5` with injected
// draws (0.9: not selected, then 0.1: selected). The first request is served
// normally, the second gets the fault; assert the outcome and the stored bytes.
import { Readable } from 'node:stream';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { Delays, EmulatorClosedError } from '../../src/emulator/delays.js';
import type { EventsRequestRecord, Fault, FaultKind } from '../../src/emulator/types.js';
import { ndjson, newAgent, postEvents, readStored, scriptedRandom, startEmu, tempDir } from './helpers.js';

type Kind = FaultKind;

// [fault, outcome of the second request, what is stored after both]
const MATRIX: [Kind, EventsRequestRecord['outcome'], string][] = [
  [{ kind: 'status', status: 503 }, 503, ndjson(2)],
  [{ kind: 'partial', status: 500 }, 500, ndjson(3)],
  [{ kind: 'partial', status: 422 }, 422, ndjson(3)],
  [{ kind: 'reset' }, 'reset', ndjson(2)],
  [{ kind: 'reset_after_insert' }, 'reset', ndjson(4)],
  [{ kind: 'hang' }, 'hang', ndjson(2)],
  [{ kind: 'slow', delay_ms: 20 }, 200, ndjson(4)],
  [{ kind: 'goaway' }, 'goaway', ndjson(4)],
  [{ kind: 'reject_marker', marker: '"i":3' }, 400, ndjson(2)],
];

describe.each([
  ['every', { every: 2 }],
  ['p', { p: 0.5 }],
])('fault kinds selected by %s', (_sel, selector) => {
  it.each(MATRIX)('%j', async (kind, outcome, stored) => {
    const dir = await tempDir();
    const records: EventsRequestRecord[] = [];
    let sawSecond!: () => void;
    const secondSeen = new Promise<void>((resolve) => (sawSecond = resolve));
    const emu = await startEmu({
      dataDir: dir,
      random: scriptedRandom([0.9, 0.1]),
      faults: [{ ...kind, ...selector } as Fault],
      onEventsRequest: (r) => {
        records.push(r);
        if (records.length === 2) sawSecond();
      },
    });
    expect((await postEvents(emu, { body: ndjson(2) })).status).toBe(200);
    const abort = new AbortController();
    const second = request(`${emu.url}/v0/events?name=events&wait=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emu.token}` },
      body: Readable.from([Buffer.from(ndjson(2, 2))]),
      signal: abort.signal,
      dispatcher: newAgent(),
    }).then(
      (res) => res.body.dump(),
      () => undefined,
    );
    await secondSeen;
    abort.abort(); // ends a hung request; the others are already decided
    await second;
    expect(records.map((r) => r.outcome)).toEqual([200, outcome]);
    expect(await readStored(dir, 'events')).toBe(stored);
  });
});

describe('Delays', () => {
  it('close() rejects pending slow delays so no request touches a closed store', async () => {
    const delays = new Delays();
    const pending = delays.delay(60 * 60 * 1000);
    delays.close();
    await expect(pending).rejects.toBeInstanceOf(EmulatorClosedError);
    await expect(delays.delay(1)).rejects.toBeInstanceOf(EmulatorClosedError);
  });
});

