// A scan that fails after it has read between its slices: caughtUp said
// false while the scan had slices to go (first-scan.test.ts), and must not
// go on saying so once that scan has ended, even by a failure. A caughtUp
// stuck at false holds the end-of-backlog rule back: a Data Source's last
// part-full batch then waits for its linger instead of going at once.
// And a failure of the loop is the agent's fatal error (an ERROR, exit 1):
// it was an unhandled rejection, a crash with a bare stack.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

describe('a scan that fails between its slices', () => {
  it('leaves the spooler caught up with what it read', async () => {
    const failure = new Error('injected: the scan fails in its second slice');
    const atFailure: boolean[] = [];
    let stop!: (closing: Promise<unknown>) => void;
    const stopped = new Promise<unknown>((resolve) => (stop = resolve));
    // A slice of one path: 'ev/a' is found and read between the slices, then
    // finding 'zz/b' (another Data Source) fails the scan.
    const s = await setup(
      {
        onDiscovered: (_ds, file) => {
          if (!file.endsWith('b.ndjson')) return;
          atFailure.push(s.spooler.caughtUp('ev'));
          // Stop the loop first: close() awaits it and takes the scan's error,
          // so the failure is not an unhandled rejection.
          stop(
            s.spooler.close().then(
              () => null,
              (err: unknown) => err,
            ),
          );
          throw failure;
        },
      },
      { scanSlice: 1 },
    );
    await mkdir(path.join(s.spool, 'zz'));
    await writeFile(path.join(s.spool, 'ev', 'a.ndjson'), '{"i":1}\n');
    await writeFile(path.join(s.spool, 'zz', 'b.ndjson'), '{"i":2}\n');
    s.spooler.start();
    // The loop ends with the scan: close(), called at the failure, returns its error.
    expect(await stopped, 'the scan failed with the injected error').toBe(failure);
    expect(atFailure, "not caught up while the scan still had 'zz/b' to look at").toEqual([false]);
    expect(s.spooler.caughtUp('ev'), "'ev' caught up once the failed scan has ended").toBe(true);
    s.batcher.closeAll();
    expect(s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean))).toEqual(['{"i":1}']);
  });

  it("is the agent's fatal error when it has one (onFatal), and close() then returns", async () => {
    const failure = new TypeError('injected: the listing fails');
    const fatal: unknown[] = [];
    let told!: () => void;
    const toldP = new Promise<void>((resolve) => (told = resolve));
    const s = await setup(
      {},
      {
        listFiles: () => Promise.reject(failure),
        onFatal: (err) => {
          fatal.push(err);
          told();
        },
      },
    );
    s.spooler.start();
    await toldP;
    expect(fatal).toEqual([failure]);
    await s.spooler.close();
  });
});
