// The spooler tells when a read round found nothing left to read (onIdle):
// the agent then looks, a moment later, for a backlog's last partial batch.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

describe('spooler idle', () => {
  it('reports idle only once every file is read to its end, with every byte handed to the batcher', async () => {
    const seen: Array<{ caughtUp: boolean; handedOver: number }> = [];
    let idle!: () => void;
    const firstIdle = new Promise<void>((resolve) => (idle = resolve));
    const { spool, spooler, batcher, closed } = await setup({
      onIdle: () => {
        const inClosed = closed.reduce((n, b) => n + b.body.length, 0);
        seen.push({ caughtUp: spooler.caughtUp('ev'), handedOver: inClosed + batcher.openBytes });
        idle();
      },
    });
    const body = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(40) })).join('\n') + '\n';
    // Two files, each several read buffers long.
    await writeFile(path.join(spool, 'ev', 'a.ndjson'), body);
    await writeFile(path.join(spool, 'ev', 'b.ndjson'), body);
    spooler.start();
    await firstIdle;
    await spooler.close();
    expect(seen.length).toBeGreaterThan(0);
    for (const s of seen) expect(s).toEqual({ caughtUp: true, handedOver: 2 * Buffer.byteLength(body) });
  });
});
