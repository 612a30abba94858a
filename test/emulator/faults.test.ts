// Every fault kind, selected with `every`, with `p` (injected random), by
// `datasource`, and through failNext; the grammar is validated strictly.
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import type { EventsRequestRecord } from '../../src/emulator/types.js';
import { ManualClock } from '../support/manual-clock.js';
import { ndjson, newAgent, nextWait, onCleanup, postEvents, readStored, scriptedRandom, startEmu, tempDir } from './helpers.js';

describe('fault kinds', () => {
  it('status with every: every 3rd request gets 503, with retry_after for 429', async () => {
    const emu = await startEmu({ faults: [{ kind: 'status', status: 429, retry_after: 7, every: 3 }] });
    const statuses: number[] = [];
    let retryAfter: unknown;
    for (let i = 0; i < 6; i++) {
      const res = await postEvents(emu);
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers['retry-after'];
    }
    expect(statuses).toEqual([200, 200, 429, 200, 200, 429]);
    expect(retryAfter).toBe('7');
    expect(emu.stats().rows).toEqual({ events: 4 });
  });

  it('status with p: fires when the injected random draws below p', async () => {
    const emu = await startEmu({ random: scriptedRandom([0.5, 0.05, 0.2, 0.099]), faults: [{ kind: 'status', status: 503, p: 0.1 }] });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await postEvents(emu)).status);
    expect(statuses).toEqual([200, 503, 200, 503]);
  });

  it('datasource filter: only matching requests count toward every', async () => {
    const emu = await startEmu({ faults: [{ kind: 'status', status: 500, every: 2, datasource: 'b' }] });
    const seen = [];
    for (const name of ['a', 'b', 'a', 'a', 'b', 'b']) seen.push(`${name}:${(await postEvents(emu, { name })).status}`);
    expect(seen).toEqual(['a:200', 'b:200', 'a:200', 'a:200', 'b:500', 'b:200']);
  });

  it('partial with every: half the rows stored, then the status', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, faults: [{ kind: 'partial', status: 500, every: 1 }] });
    const res = await postEvents(emu, { body: ndjson(7) });
    expect(res.status).toBe(500);
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
    expect(emu.stats()).toMatchObject({ requests_by_status: { '500': 1 }, rows: { events: 3 } });
  });

  it('reset: connection dropped, nothing inserted', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir, faults: [{ kind: 'reset', every: 1 }] });
    await expect(postEvents(emu, { body: ndjson(2) }, newAgent())).rejects.toThrow(/other side closed|socket/i);
    expect(await readStored(dir, 'events')).toBe('');
    expect(emu.stats().requests_by_status).toEqual({ reset: 1 });
  });

  it('reset_after_insert: everything inserted, then the connection dropped', async () => {
    const dir = await tempDir();
    const emu = await startEmu({ dataDir: dir });
    emu.failNext(1, { kind: 'reset_after_insert' });
    await expect(postEvents(emu, { body: ndjson(3) }, newAgent())).rejects.toThrow(/other side closed|socket/i);
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
    expect(emu.stats().requests_by_status).toEqual({ reset: 1 });
  });

  it('hang: never answered until close(), which destroys the hung request', async () => {
    const dir = await tempDir();
    let hung!: (r: EventsRequestRecord) => void;
    const hungSeen = new Promise<EventsRequestRecord>((resolve) => (hung = resolve));
    const emu = await startEmulator({
      listen: '127.0.0.1:0',
      dataDir: dir,
      faults: [{ kind: 'hang', every: 1 }],
      onEventsRequest: (r) => r.outcome === 'hang' && hung(r),
    });
    onCleanup(() => emu.close());
    const pending = postEvents(emu, { body: ndjson(1) }, newAgent());
    const settled = pending.then(
      () => 'answered',
      () => 'failed',
    );
    expect((await hungSeen).outcome).toBe('hang');
    expect(emu.stats().requests_by_status).toEqual({ hang: 1 });
    await emu.close();
    expect(await settled).toBe('failed');
    expect(await readStored(dir, 'events')).toBe('');
  });

  it('slow: waits delay_ms, then processes normally', async () => {
    const clock = new ManualClock();
    const emu = await startEmu({ faults: [{ kind: 'slow', delay_ms: 60, datasource: 'slow' }], timers: clock });
    const pending = postEvents(emu, { name: 'slow', body: ndjson(2) });
    expect(await nextWait(clock)).toBe(60);
    expect(emu.stats().rows, 'nothing stored while it waits').toEqual({});
    clock.advance(60);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ successful_rows: 2, quarantined_rows: 0 });
  });

  it('reject_marker with p only rejects when selected and the marker is present', async () => {
    const emu = await startEmu({ random: scriptedRandom([0.9, 0.1, 0.1]), faults: [{ kind: 'reject_marker', marker: 'BAD', p: 0.5 }] });
    expect((await postEvents(emu, { body: '{"x":"BAD"}\n' })).status).toBe(200); // not selected (0.9)
    expect((await postEvents(emu, { body: '{"x":"BAD"}\n' })).status).toBe(400); // selected, has the marker
    expect((await postEvents(emu, { body: '{"x":"ok"}\n' })).status).toBe(200); // selected, no marker
  });

  it('reject_marker does not shadow a later fault in the list', async () => {
    const emu = await startEmu({ faults: [{ kind: 'reject_marker', marker: 'BAD' }, { kind: 'status', status: 503, every: 2 }] });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await postEvents(emu)).status);
    expect(statuses).toEqual([200, 503, 200, 503]);
  });

  it('failNext comes before configured faults and does not advance their counters', async () => {
    const emu = await startEmu({ faults: [{ kind: 'status', status: 500, every: 2 }] });
    emu.failNext(2, { kind: 'status', status: 503 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await postEvents(emu)).status);
    expect(statuses).toEqual([503, 503, 200, 500, 200]);
  });

  it('setFaults replaces the list and restarts counters', async () => {
    const emu = await startEmu({ faults: [{ kind: 'status', status: 500, every: 1 }] });
    expect((await postEvents(emu)).status).toBe(500);
    emu.setFaults([{ kind: 'status', status: 502, every: 2 }]);
    expect((await postEvents(emu)).status).toBe(200);
    expect((await postEvents(emu)).status).toBe(502);
    emu.setFaults([]);
    expect((await postEvents(emu)).status).toBe(200);
  });

  it('faults apply after auth and rate limit: a bad token is 403, not the fault', async () => {
    const emu = await startEmu({ faults: [{ kind: 'status', status: 503 }] });
    expect((await postEvents(emu, { token: 'wrong' })).status).toBe(403);
    expect((await postEvents(emu)).status).toBe(503);
  });
});

describe('faults grammar', () => {
  it.each([
    [[{ kind: 'boom' }], /faults\[0\].*unknown kind "boom"/],
    [[{ kind: 'status', status: 503, evry: 3 }], /faults\[0\].*unknown field "evry"/],
    [[{ kind: 'status' }], /needs "status"/],
    [[{ kind: 'status', status: 503, p: 0.5, every: 2 }], /"p" or "every", not both/],
    [[{ kind: 'status', status: 503, p: 2 }], /"p" must be a number in \(0, 1\]/],
    [[{ kind: 'partial', status: 503 }], /500 or 422/],
    [[{ kind: 'slow' }], /needs "delay_ms"/],
    [[{ kind: 'reset' }, { kind: 'reject_marker', marker: '' }], /faults\[1\].*"marker"/],
    [[{ kind: 'hang', datasource: '1x' }], /"datasource" must be a Data Source name/],
    [{ kind: 'hang' }, /must be a JSON array/],
  ])('rejects %j', async (faults, message) => {
    await expect(startEmulator({ listen: '127.0.0.1:0', faults: faults as never })).rejects.toMatchObject({
      code: 'SPOOLSHIP_ERR_EMULATOR_FAULTS',
      message: expect.stringMatching(message),
    });
  });

  it('failNext validates its fault too', async () => {
    const emu = await startEmu();
    expect(() => emu.failNext(1, { kind: 'status' } as never)).toThrow(/needs "status"/);
    expect(() => emu.failNext(0, { kind: 'reset' })).toThrow(RangeError);
  });
});
