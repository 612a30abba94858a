// `spoolship queue dead-letter` on a running agent ends the delivery of a
// batch: the sender releases it, and what is not acknowledged yet goes to the
// dead-letter store (reason operator). Real sender and emulator, manual clock.
import { describe, expect, it } from 'vitest';
import { harness, lines, settle } from './helpers.js';

describe('Sender.release', () => {
  it('a batch waiting for its parked Data Source: released, all its lines are dead-lettered (operator, last answer 400), the delivery ends done', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]); // every line: request-level
    const batch = await h.batch('ds', lines('r', 64), 7);
    const done = h.sender.deliver(batch);
    await settle(() => h.parks.length === 1, 'park');
    await settle(() => h.clock.waiting > 0, 'waiting while parked');
    const held = h.sender.held();
    expect(held.map((b) => ({ id: b.root.id, parked: b.parked, status: b.history.lastStatus }))).toEqual([{ id: 7, parked: true, status: 400 }]);
    const sentBefore = h.sent.length;

    const release = h.sender.release(7)!;
    expect(await release.wait()).toBe(64);
    expect(await done).toBe('done');
    expect(h.sent.length).toBe(sentBefore); // nothing more was sent
    expect(h.deadLetters.flatMap((d) => d.lines)).toHaveLength(64);
    expect(new Set(h.deadLetters.map((d) => `${d.reason}:${d.status}`))).toEqual(new Set(['operator:400']));
    expect(h.sender.held()).toEqual([]);
    expect(h.sender.history(7)).toBeNull();
    // The release proved nothing about the name: the Data Source stays parked.
    expect(h.sender.parkedDataSources().get('ds')).toBe('bad_request');
  });

  it("operatorMoved: the park ends once none of the Data Source's batches waits; with one still waiting, that one probes at once instead", async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]); // every line: request-level
    const first = h.sender.deliver(await h.batch('ds', lines('a', 64), 1));
    await settle(() => h.parks.length === 1, 'park');
    const second = h.sender.deliver(await h.batch('ds', lines('b', 64), 2));
    await settle(() => h.sender.held().length === 2 && h.clock.waiting > 0, 'both waiting while parked');
    expect(await h.sender.release(1)!.wait()).toBe(64);
    expect(await first).toBe('done');
    h.emu.setFaults([]);
    const sentBefore = h.sent.length;
    h.sender.operatorMoved('ds');
    // Batch 2 still waits: the Data Source stays parked, but its probe goes now, not 60 s later (the clock does not move).
    expect(h.sender.parkedDataSources().get('ds')).toBe('bad_request');
    expect(await second).toBe('done');
    expect(h.sent.length).toBe(sentBefore + 1);
    expect(h.sender.parkedDataSources().has('ds')).toBe(false);

    // Parked again with nothing of it waiting once its batch is released: the move ends the park.
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]);
    const third = h.sender.deliver(await h.batch('ds', lines('c', 64), 3));
    await settle(() => h.sender.parkedDataSources().get('ds') === 'bad_request' && h.clock.waiting > 0, 'parked again');
    expect(await h.sender.release(3)!.wait()).toBe(64);
    expect(await third).toBe('done');
    expect(h.sender.parkedDataSources().get('ds')).toBe('bad_request');
    h.sender.operatorMoved('ds');
    expect(h.sender.parkedDataSources().has('ds')).toBe(false);
  });

  it('a budget park with nothing left to probe with (its batch released): a wake (SIGHUP, token file) unparks it; with a batch queued on disk it waits for that probe', async () => {
    const h = await harness({ dataDir: null });
    h.token.value = 'wrong-token';
    const done = h.sender.deliver(await h.batch('ds', lines('t', 5), 4));
    await settle(() => h.parks.length === 1 && h.clock.waiting > 0, 'parked, waiting for the probe');
    expect(await h.sender.release(4)!.wait()).toBe(5);
    expect(await done).toBe('done');
    h.token.value = h.emu.token;
    // A batch still in the disk queue is the probe (the replayer sends it): the park stays until its answer.
    h.sender.wake(false);
    expect(h.parks).toEqual([{ scope: 'budget', reason: 'token_rejected' }]);
    // Nothing anywhere: nothing can prove the new token, and nothing is at risk.
    h.sender.wake(true);
    expect(h.parks).toEqual([
      { scope: 'budget', reason: 'token_rejected' },
      { scope: 'budget', reason: null },
    ]);
    // The next batch goes at once (the clock does not move).
    expect(await h.sender.deliver(await h.batch('ds', lines('u', 2), 5))).toBe('done');
  });

  it('a batch mid-bisection: the acknowledged half stays acknowledged; only the unresolved pieces and the isolated bad line are dead-lettered', async () => {
    const h = await harness({ dataDir: null });
    h.emu.setFaults([{ kind: 'reject_marker', marker: 'BAD' }]);
    const ls = lines('g', 16);
    ls[12] = JSON.stringify({ k: 'BAD' });
    const batch = await h.batch('ds', ls, 3);
    // The budget parks while the batch is being bisected: the token is rejected from the 3rd request on
    // (whole batch: 400; left half: stored; right half: 401).
    h.beforePost = (n) => {
      if (n === 2) h.token.value = 'revoked';
    };
    const done = h.sender.deliver(batch);
    await settle(() => h.parks.some((p) => p.reason === 'token_rejected'), 'budget parked');
    await settle(() => h.clock.waiting > 0, 'waiting while parked');
    const acked = h.emu.stats().rows.ds ?? 0;
    expect(acked).toBe(8);
    expect(await h.sender.release(3)!.wait()).toBe(16 - acked);
    expect(await done).toBe('done');
    const moved = h.deadLetters.flatMap((d) => d.lines);
    expect(moved).toHaveLength(16 - acked);
    expect(moved).toContain(ls[12]);
    expect(h.emu.stats().rows.ds).toBe(acked);
  });

  it('released while single lines wait as possible rejects: they go as rejected, and the count returned is every line moved', async () => {
    const h = await harness({ dataDir: null }, { codec: 'none' });
    h.emu.setFaults([{ kind: 'reject_marker', marker: '"k"' }]); // every line refused
    const singleLines = () => h.sent.filter((s) => s.body.indexOf(10) === s.body.length - 1).length;
    // Two single lines of two quarters refused (not yet three: not yet
    // request-level, so they are held as possible rejects), then the budget
    // parks: the token is rejected from the next request on.
    h.beforePost = () => {
      if (singleLines() === 2) h.token.value = 'revoked';
    };
    const batch = await h.batch('ds', lines('p', 64), 11);
    const done = h.sender.deliver(batch);
    await settle(() => h.parks.some((p) => p.reason === 'token_rejected'), 'budget parked');
    await settle(() => h.clock.waiting > 0, 'waiting while parked');
    expect(h.deadLetters).toEqual([]);
    expect(await h.sender.release(11)!.wait()).toBe(64);
    expect(await done).toBe('done');
    const byReason = new Map<string, number>();
    for (const d of h.deadLetters) byReason.set(d.reason, (byReason.get(d.reason) ?? 0) + d.lines.length);
    expect(Object.fromEntries(byReason)).toEqual({ operator: 62, rejected: 2 });
  });

  it('an unknown batch is not released; a release the sender stops before ends aborted', async () => {
    const h = await harness({ dataDir: null });
    expect(h.sender.release(42)).toBeNull();
    h.token.value = 'revoked';
    const done = h.sender.deliver(await h.batch('ds', lines('a', 4), 9));
    await settle(() => h.clock.waiting > 0, 'waiting while parked');
    void h.sender.close();
    expect(await done).toBe('aborted');
    expect(h.sender.release(9)).toBeNull();
    expect(h.deadLetters).toEqual([]);
  });
});
