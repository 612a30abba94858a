// The state forgets what it can never need again: a truncated file's old
// generation once everything read from it is done (every copytruncate used to
// add an entry to the state, the checkpoint and start-up relocation for good).
import { truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

describe('old generations', () => {
  it('20 copytruncates leave one file in the state once their batches are done', async () => {
    const { spool, spooler, store, readAll, closed } = await setup();
    const file = path.join(spool, 'ev', 'app.ndjson');
    let done = 0;
    const acknowledge = () => {
      for (; done < closed.length; done++) store.completeBatch(closed[done]!.id);
    };
    for (let round = 0; round <= 20; round++) {
      if (round > 0) await truncate(file, 0);
      await writeFile(file, `{"round":${round}}\n`.repeat(3 + round));
      await spooler.scan();
      await readAll();
      acknowledge();
    }
    await spooler.scan();
    expect(closed.map((b) => b.lines).reduce((a, b) => a + b, 0)).toBe(Array.from({ length: 21 }, (_, r) => 3 + r).reduce((a, b) => a + b, 0));
    expect(store.fileCount, 'only the current generation is kept').toBe(1);
  });
});
