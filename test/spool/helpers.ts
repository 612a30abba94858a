// A Spooler over a temp spool with a real StateStore and Batcher, for tests
// that drive it directly: no watcher, no periodic rescan.
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { Batcher, type ClosedBatch } from '../../src/batcher/batcher.js';
import { Router } from '../../src/spool/routes.js';
import { Spooler, type SpoolerEvents } from '../../src/spool/spooler.js';
import type { SpoolerOptions } from '../../src/spool/options.js';
import { StateStore } from '../../src/state/store.js';
import { relocateFiles } from '../../src/spool/relocate.js';
import { systemClock } from '../../src/util/clock.js';
import { listFiles } from '../../src/spool/walk.js';
import type { ReadLoop } from '../../src/spool/read-loop.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** `options`: replace some of the spooler's options (the pipeline's backpressure, say); a function of the spool's path when they need it. */
export async function setup(events: Partial<SpoolerEvents> = {}, options: Partial<SpoolerOptions> | ((spool: string) => Partial<SpoolerOptions>) = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-scan-'));
  const spool = path.join(dir, 'spool');
  await mkdir(path.join(spool, 'ev'), { recursive: true });
  const store = await StateStore.open({ stateDir: path.join(dir, 'state'), now: () => Date.now(), onBackgroundError: (err) => { throw err; }, relocate: relocateFiles });
  cleanups.push(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const closed: ClosedBatch[] = [];
  let id = 1;
  const batcher = new Batcher({
    progress: store.claims,
    batchIds: { newBatchId: () => id++ },
    now: () => Date.now(),
    maxBytes: 1 << 20,
    maxLineBytes: 1 << 16,
    maxOpenBytes: 1 << 22,
    validateJson: false,
    sizeCaps: { capFor: () => 1 << 20 },
    onClose: (b) => closed.push({ ...b, body: Buffer.from(b.body) }),
    onDeadLetter: () => undefined,
  });
  const router = new Router(spool, []);
  const realList = () => listFiles(router.walkRoots());
  const base: SpoolerOptions = {
    router,
    store,
    batcher,
    clock: systemClock,
    startAt: 'beginning',
    onComplete: 'keep',
    idleMs: 60_000,
    forgetAfterMs: 600_000,
    maxLineBytes: 1 << 16,
    rescanMs: 3_600_000,
    room: { waitForRoom: async () => undefined, hasRoom: true },
    events: { onDiscovered: () => undefined, onTruncated: () => undefined, onFinished: () => undefined, ...events },
    watch: false,
    // The scan's listing, replaceable to freeze it at a moment.
    listFiles: () => internals.listCandidates(),
    ...(typeof options === 'function' ? options(spool) : options),
  };
  const spooler = new Spooler(base);
  const internals = {
    listCandidates: realList,
    readRound: () => (spooler as unknown as { reader: ReadLoop }).reader.round(() => false),
  };
  const readAll = async () => {
    while (await internals.readRound());
    batcher.closeAll();
  };
  /** A new spooler on the same state and batcher (`spooler` closed first), as a reload makes one: `router` the new config's routes. */
  const respool = async (next: Router): Promise<Spooler> => {
    await spooler.close();
    const again = new Spooler({ ...base, router: next, listFiles: () => listFiles(next.walkRoots()) });
    cleanups.push(() => again.close());
    return again;
  };
  return { spool, stateDir: path.join(dir, 'state'), store, spooler, batcher, internals, realList, readAll, closed, respool };
}

/** `ev/app.ndjson` of `{"a":1}` and a partial `{"b":"partial"}`, scanned and read (`mtime`: when it was last written); its path. */
export async function readWithPartialLine(s: Awaited<ReturnType<typeof setup>>, mtime?: Date): Promise<string> {
  const app = path.join(s.spool, 'ev', 'app.ndjson');
  await writeFile(app, '{"a":1}\n{"b":"partial"}');
  if (mtime) await utimes(app, mtime, mtime);
  await s.spooler.scan();
  await s.readAll();
  return app;
}

/** Every closed batch's body, in order. */
export function sent(s: Awaited<ReturnType<typeof setup>>): string {
  return s.closed.map((x) => x.body.toString()).join('');
}
