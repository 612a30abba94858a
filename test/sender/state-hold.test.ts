// A full or read-only state_dir cannot record acknowledgements: no request
// starts (sender/clearance.ts), or every line the platform acknowledged
// while the disk was full came twice after a kill -9 (a soak: 618-1,106
// lines). A spilled body goes all the same: its answer frees the room it
// holds in the state_dir (the spill tests show the wait that holding it made).
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SpilledBody } from '../../src/sender/body.js';
import { harness, lines, settle } from './helpers.js';

describe('Sender while the state cannot record acknowledgements', () => {
  it('a batch not sent yet waits, sending nothing, until the hold ends', async () => {
    const state = { held: true };
    const h = await harness({}, { stateHeld: () => state.held });
    const idle = h.clock.waiting;
    const done = h.sender.deliver(await h.batch('ds', lines('a', 10)));
    // Waiting on the clock (the hold's look again), nothing sent.
    await settle(() => h.clock.waiting > idle, 'the batch to wait for the hold');
    expect(h.sent).toHaveLength(0);
    // Looking again finds it still held: still nothing sent.
    h.clock.advance(1000);
    await settle(() => h.clock.waiting > idle, 'the batch to wait again');
    expect(h.sent).toHaveLength(0);
    state.held = false;
    h.sender.stateChanged();
    expect(await done).toBe('done');
    expect(h.sent).toHaveLength(1);
  });

  it('a batch already sent waits too before its retry; it goes, the same bytes, when the hold ends', async () => {
    const state = { held: false };
    const h = await harness({ rps: 1000 }, { stateHeld: () => state.held });
    h.emu.failNext(1, { kind: 'status', status: 503 });
    const done = h.sender.deliver(await h.batch('ds', lines('a', 10)));
    await settle(() => h.clock.waiting > 0 && h.sent.length === 1, 'the backoff after the 503');
    state.held = true;
    h.sender.stateChanged();
    // Told, the backoff sleeps on to its end.
    await settle(() => h.clock.waiting > 0, 'the backoff, told of the hold');
    h.clock.advance(h.clock.nextWakeInMs()!);
    await settle(() => h.clock.waiting > 0, 'the retry to wait for the hold');
    expect(h.sent).toHaveLength(1);
    state.held = false;
    h.sender.stateChanged();
    expect(await done).toBe('done');
    expect(h.sent).toHaveLength(2);
    expect(h.sent[1]!.body.equals(h.sent[0]!.body)).toBe(true);
  });

  it('a spilled body goes while the state is held: its answer frees the room it holds in the state_dir', async () => {
    const h = await harness({}, { stateHeld: () => true });
    const mem = await h.batch('ds', lines('s', 10));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-hold-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'body');
    await writeFile(file, mem.body as Buffer);
    const fh = await open(file, 'r');
    onTestFinished(() => fh.close());
    expect(await h.sender.deliver({ ...mem, body: new SpilledBody(fh, (mem.body as Buffer).length) })).toBe('done');
    expect(h.sent).toHaveLength(1);
  });
});
