// The checkpoint is written in chunks (a 20,000-file state is 6 MB of JSON):
// their concatenation must be exactly the format's one JSON line and CRC
// line, whatever the number of chunks, and atomicWrite must lay them down in
// order.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_VERSION, decodeCheckpoint, encodeCheckpointChunks } from '../../src/state/checkpoint-format.js';
import { atomicWrite } from '../../src/util/fsx.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function fileEntry(i: number) {
  return { key: `1:${i}:0`, dev: 1, ino: i, gen: 0, fp: 'ab'.repeat(20), fpLen: 256, path: `/spool/ds/f-${i}.ndjson`, ds: 'ds', committed: i * 7, ranges: [[i * 7, i * 7 + 5, i, i % 2 === 0]], seen: [i, 1.5, 2.5] };
}

function expected(head: Record<string, unknown>, files: object[], tail: Record<string, unknown>): string {
  const json = JSON.stringify({ version: CHECKPOINT_VERSION, ...head, files, ...tail });
  return `${json}\n#crc32 ${zlib.crc32(json).toString(16).padStart(8, '0')}\n`;
}

describe('checkpoint format: chunked writing', () => {
  const head = { journal_seq: 7, prev_journal_seq: 6, next_id: 42 };

  it('the chunks of a large state are exactly the one JSON line and its CRC, and decode to the same object', () => {
    const files = Array.from({ length: 20_000 }, (_, i) => fileEntry(i));
    let tailCalledAfter = -1;
    let seen = 0;
    const chunks = encodeCheckpointChunks(
      head,
      (function* () {
        for (const f of files) {
          seen++;
          yield f;
        }
      })(),
      () => {
        tailCalledAfter = seen;
        return { intents: [{ id: 3, ds: 'ds', ranges: [], at: 1 }], queued: [] };
      },
    );
    expect(chunks.length).toBeGreaterThan(3);
    expect(tailCalledAfter, 'the tail is built after the last file').toBe(files.length);
    const text = chunks.join('');
    expect(text).toBe(expected(head, files, { intents: [{ id: 3, ds: 'ds', ranges: [], at: 1 }], queued: [] }));
    const parsed = decodeCheckpoint<{ version: number; files: unknown[] }>(text);
    expect(parsed.ok && parsed.value.files.length).toBe(files.length);
  });

  it('no files and an empty tail are still one valid line', () => {
    const text = encodeCheckpointChunks(head, [], () => ({})).join('');
    expect(text).toBe(expected(head, [], {}));
    expect(decodeCheckpoint(text).ok).toBe(true);
  });

  it('atomicWrite lays the chunks down in order', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-cpfmt-'));
    dirs.push(dir);
    const chunks = encodeCheckpointChunks(head, Array.from({ length: 10_000 }, (_, i) => fileEntry(i)), () => ({ intents: [] }));
    const file = path.join(dir, 'checkpoint.json');
    await atomicWrite(file, 'old');
    await atomicWrite(file, chunks);
    expect(await readFile(file, 'utf8')).toBe(chunks.join(''));
    expect(await readFile(`${file}.prev`, 'utf8')).toBe('old');
  });
});
