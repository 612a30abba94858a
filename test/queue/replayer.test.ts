// The queue replayer against a real Sender, emulator and queue on disk, on a
// manual clock: a parked Data Source's queued batches must not hold the
// replayer's loops (REPLAY_CONCURRENCY of them) while the queue holds batches
// of Data Sources that are fine.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { QueueReplayer, REPLAY_CONCURRENCY } from '../../src/queue/replayer.js';
import { RetryQueue } from '../../src/queue/retry-queue.js';
import { tempDir } from '../pipeline/helpers.js';
import { harness, lines, settle, type Harness } from '../sender/helpers.js';
import { bodyBytes } from '../../src/sender/body.js';

async function replayerFor(h: Harness, queue: RetryQueue): Promise<{ delivered: number[]; replayer: QueueReplayer }> {
  const delivered: number[] = [];
  const replayer = new QueueReplayer({
    queue,
    sender: h.sender,
    clock: h.clock,
    log: pino({ level: 'silent' }),
    onChange: () => undefined,
    onDelivered: (id) => void delivered.push(id),
    onPastDedupWindow: () => undefined,
    writes: { retryStateWrite: (fn) => fn() },
    onFatal: (err) => {
      throw err;
    },
  });
  replayer.start();
  return { delivered, replayer };
}

async function enqueue(h: Harness, queue: RetryQueue, ds: string, id: number): Promise<void> {
  const b = await h.batch(ds, lines(`${ds}${id}-`, 2), id);
  await queue.append({ id, ds, encoding: b.encoding, rawLen: b.rawLen, lines: b.lines, queuedAt: h.clock.now() }, await bodyBytes(b.body));
}

/**
 * The queue, with each take() that finds nothing held after it has looked
 * until letGo(): what happens meanwhile (a batch queued, a park woken) comes
 * while the replayer's loops look. Takes after letGo() are not held.
 */
function holdEmptyTakes(queue: RetryQueue): { queue: RetryQueue; readonly looking: number; letGo: () => void } {
  let looking = 0;
  let holding = true;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const proxy = new Proxy(queue, {
    get(target, key) {
      if (key === 'take') {
        return async (passOver?: (ds: string) => boolean) => {
          const rec = await target.take(passOver);
          if (rec || !holding) return rec;
          looking++;
          await held;
          return rec;
        };
      }
      const v = Reflect.get(target, key) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return {
    queue: proxy,
    get looking() {
      return looking;
    },
    letGo: () => {
      holding = false;
      release();
    },
  };
}

describe('QueueReplayer: parked Data Sources', () => {
  it("a Data Source parked datasource_rejected keeps its queued batches queued and does not hold back the other Data Sources' batches", async () => {
    const h = await harness({ datasources: ['known'], appendTokens: ['append-only'] });
    h.token.value = 'append-only';
    // The token is proven for 'known': a 403 for 'gone' parks 'gone' alone.
    expect(await h.sender.deliver(await h.batch('known', lines('k', 1), 100))).toBe('done');
    const queue = await RetryQueue.open(await tempDir(), 1e9, () => undefined);
    // More batches of the refused Data Source than the replayer has loops, older than the good one.
    const goneIds = Array.from({ length: REPLAY_CONCURRENCY + 2 }, (_, i) => i + 1);
    for (const id of goneIds) await enqueue(h, queue, 'gone', id);
    await enqueue(h, queue, 'known', 50);
    const r = await replayerFor(h, queue);
    try {
      await settle(() => r.delivered.includes(50) && queue.batches === goneIds.length, 'the batch of the Data Source that is fine delivered and acked');
      expect(h.emu.stats().rows).toEqual({ known: 3 });
      expect(h.parks).toEqual([{ scope: 'gone', reason: 'datasource_rejected' }]);
      // The refused batches wait for the park's probe, queued (nothing sent in a loop).
      const sentBefore = h.sent.length;
      await settle(() => h.clock.waiting > 0, 'the replayer waiting for the probe time');
      expect(h.sent.length).toBe(sentBefore);
      // 60 s later exactly one probe of 'gone' goes, is refused, and everything stays queued.
      h.clock.advance(60_000);
      await settle(() => h.sent.length === sentBefore + 1 && h.clock.waiting > 0, 'one probe after 60 s');
      expect(h.sent.at(-1)!.ds).toBe('gone');
      expect(queue.batches).toBe(goneIds.length);
      // The Data Source now exists (created by another token): the next probe unparks it and the queue drains.
      h.token.value = h.emu.token;
      h.sender.wake();
      await settle(() => goneIds.every((id) => r.delivered.includes(id)), 'every queued batch of the unparked Data Source delivered');
      expect(h.emu.stats().rows).toEqual({ known: 3, gone: 2 * goneIds.length });
      expect(h.parks.at(-1)).toEqual({ scope: 'gone', reason: null });
    } finally {
      // The sender first: a replayed delivery waiting inside it ends 'aborted'.
      void h.sender.close();
      await r.replayer.close();
      await queue.close();
    }
  });
});

describe('QueueReplayer: destroy', () => {
  it('ends a delivery waiting inside the sender at once, while the sender stays open; the batch stays queued', async () => {
    // A failed start destroys the replayer before the sender (last started, first ended).
    const h = await harness();
    h.token.value = 'revoked';
    const queue = await RetryQueue.open(await tempDir(), 1e9, () => undefined);
    await enqueue(h, queue, 'a', 1);
    const r = await replayerFor(h, queue);
    try {
      await settle(() => h.parks.some((p) => p.reason === 'token_rejected') && h.clock.waiting > 0, 'the queued batch waiting in the budget park');
      await r.replayer.destroy();
      expect(r.delivered).toEqual([]);
      expect(queue.batches).toBe(1);
      // The sender was not closed: a batch delivered directly still goes (and waits in the same park).
      const direct = h.sender.deliver(await h.batch('a', lines('b', 1)));
      await settle(() => h.clock.waiting > 0, 'the direct delivery waiting');
      h.token.value = h.emu.token;
      h.sender.wake();
      expect(await direct).toBe('done');
    } finally {
      void h.sender.close();
      await r.replayer.close();
      await queue.close();
    }
  });
});

describe('QueueReplayer: wake-ups', () => {
  it('a batch queued while every loop looks and finds nothing is sent, not left until the next poke', async () => {
    const h = await harness();
    const queue = await RetryQueue.open(await tempDir(), 1e9, () => undefined);
    const held = holdEmptyTakes(queue);
    const r = await replayerFor(h, held.queue);
    try {
      await settle(() => held.looking === REPLAY_CONCURRENCY, 'every loop looking, the queue empty');
      // The pipeline queues a batch and pokes while the loops look.
      await enqueue(h, queue, 'ev', 7);
      r.replayer.poke();
      held.letGo();
      await settle(() => r.delivered.includes(7), 'the batch queued while the loops looked delivered');
      expect(h.emu.stats().rows).toEqual({ ev: 2 });
    } finally {
      void h.sender.close();
      await r.replayer.close();
      await queue.close();
    }
  });

  it("a park woken while every loop looks is probed at once, not at the next probe 60 s later", async () => {
    // 9b5cf51's other half: the sender's change signal is taken before
    // looking. Taken after, a SIGHUP or token change that woke the park while
    // take() passed its batches over was missed, and the loops slept until
    // the park's next probe.
    const h = await harness({ datasources: ['known'], appendTokens: ['append-only'] });
    h.token.value = 'append-only';
    expect(await h.sender.deliver(await h.batch('known', lines('k', 1), 100))).toBe('done');
    // 'gone' is parked (datasource_rejected) before the replayer starts.
    expect(await h.sender.deliver(await h.batch('gone', lines('g', 1), 101), { leaveWhenDsParked: true })).not.toBe('done');
    expect(h.parks).toEqual([{ scope: 'gone', reason: 'datasource_rejected' }]);
    const queue = await RetryQueue.open(await tempDir(), 1e9, () => undefined);
    await enqueue(h, queue, 'gone', 1);
    const held = holdEmptyTakes(queue);
    const r = await replayerFor(h, held.queue);
    try {
      await settle(() => held.looking === REPLAY_CONCURRENCY, "every loop has looked and passed the parked batch over");
      const sentBefore = h.sent.length;
      // The token file changes while they look: the park is woken.
      h.token.value = h.emu.token;
      h.sender.wake();
      held.letGo();
      // Delivered, or every loop asleep on the clock (the wake-up missed: only the clock's 60 s would end it).
      await settle(() => r.delivered.includes(1) || h.clock.waiting >= REPLAY_CONCURRENCY, 'the batch delivered, or every loop asleep');
      expect(
        { delivered: r.delivered, sent: h.sent.length - sentBefore, sleepingMs: h.clock.nextWakeInMs() },
        'the woken park probed at once by a loop, without the clock moving',
      ).toEqual({ delivered: [1], sent: 1, sleepingMs: null });
      expect(h.emu.stats().rows).toEqual({ known: 1, gone: 2 });
    } finally {
      void h.sender.close();
      await r.replayer.close();
      await queue.close();
    }
  });
});
