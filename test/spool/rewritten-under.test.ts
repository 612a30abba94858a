// A file truncated and written past the reader's offset between two reads
// (copytruncate, then a fast writer; or a file rewritten in place) never
// shows a size below that offset, and with the same first lines its start
// looks the same. Read on from it, the partial line held
// from the old content was joined to new bytes: a row that is in no file
// ("{"t":" + the new content at that offset), and the new lines past the old
// offset were shipped twice once a later look saw the new start. Each read
// now checks the bytes just before its offset; changed, the file starts
// again from 0 as a truncation, and every line ships once as written.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const lines = (tag: string, n: number, pad: string) => Array.from({ length: n }, (_, i) => `{"t":"${tag}${i}","p":"${pad}"}`);

describe('a file rewritten under the reader', () => {
  for (const [what, readerThread, partial] of [
    ['a short partial line, read here', false, '{"t":'],
    ['a short partial line, read in the reader thread', true, '{"t":'],
    ['a partial line of 16 bytes or more (checked in the same read as the chunk), read here', false, '{"t":"partial","p":"aa'],
    ['a long partial line (kept as an offset)', false, `{"t":"long","p":"${'q'.repeat(20_000)}`],
  ] as const) {
    it(`${what}: nothing is joined, the new content ships once from 0, and it is a truncation`, async () => {
      const truncations: string[] = [];
      let threadReady!: () => void;
      const ready = new Promise<void>((r) => (threadReady = r));
      const s = await setup({ onTruncated: (_ds, p) => void truncations.push(p), onReaderThreadReady: () => threadReady() }, { readerThread });
      const file = path.join(s.spool, 'ev', 'app.ndjson');
      const old = lines('old', 100, 'aaaa');
      await writeFile(file, `${old.join('\n')}\n${partial}`);
      await s.spooler.scan();
      await s.readAll();
      // The reader thread takes the reads once it says it is ready.
      if (readerThread) await ready;
      // Truncated and written past the old offset at once: the same first lines
      // (its fingerprint matches), then others of other lengths.
      const fresh = [...old.slice(0, 50), ...lines('new', 3000, 'zzzzzzzzz')];
      await writeFile(file, `${fresh.join('\n')}\n`);
      await s.spooler.scan();
      await s.readAll();
      await s.spooler.scan();
      await s.readAll();
      const shipped = s.closed.flatMap((b) => b.body.toString().split('\n').filter(Boolean));
      expect(shipped.filter((l) => !old.includes(l) && !fresh.includes(l)), 'rows in no file').toEqual([]);
      expect(shipped).toEqual([...old, ...fresh]);
      expect(truncations).toEqual([file]);
    });
  }
});
