// zstd bodies are sized from their frame and block headers before they are
// decoded, so a small body that would decode to gigabytes is refused (413)
// without being decoded, as gzip's bounded inflate already did.
import * as zstd from '@mongodb-js/zstd';
import { describe, expect, it } from 'vitest';
import { ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

const BLOCK_MAX = 128 * 1024;

/** A zstd frame with a 128 KiB window, an optional declared content size, and the given blocks. */
function frame(blocks: Buffer[], contentSize?: number): Buffer {
  const fcs = Buffer.alloc(contentSize === undefined ? 0 : 8);
  if (contentSize !== undefined) fcs.writeBigUInt64LE(BigInt(contentSize));
  const descriptor = contentSize === undefined ? 0x00 : 0xc0; // FCS field of 8 bytes, not single-segment
  return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, descriptor, 0x38 /* window 2^17 */]), fcs, ...blocks]);
}

function blockHeader(type: number, size: number, last: boolean): Buffer {
  const v = (size << 3) | (type << 1) | (last ? 1 : 0);
  return Buffer.from([v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff]);
}
const rle = (byte: number, size: number, last = false): Buffer => Buffer.concat([blockHeader(1, size, last), Buffer.from([byte])]);
const raw = (content: Buffer, last = false): Buffer => Buffer.concat([blockHeader(0, content.length, last), content]);

/** Many RLE blocks of newlines (empty lines): `count` x 128 KiB once decoded. */
function rleBlocks(count: number): Buffer[] {
  return Array.from({ length: count }, (_, i) => rle(0x0a, BLOCK_MAX, i === count - 1));
}

const zstdHeaders = { 'content-encoding': 'zstd' };

describe('zstd bodies are bounded before decoding', () => {
  it('a frame that declares a small size but carries blocks far past --max-body is 413, not decoded', async () => {
    const emu = await startEmu({ maxBody: 100_000, recordRequests: true });
    const bomb = frame(rleBlocks(400), 100); // 50 MiB of blocks behind a 100-byte claim, in 1.6 KB
    const res = await postEvents(emu, { body: bomb, headers: zstdHeaders });
    expect(res.status).toBe(413);
    expect(emu.requests()[0]).toMatchObject({ outcome: 413, decodedBytes: null });
  });

  it('a real zstd bomb is 413; a one-shot body of exactly --max-body is accepted', async () => {
    const maxBody = 1_000_000;
    const emu = await startEmu({ maxBody });
    const bomb = await zstd.compress(Buffer.alloc(50_000_000, 0x0a), 3);
    expect(bomb.length).toBeLessThan(10_000);
    expect((await postEvents(emu, { body: bomb, headers: zstdHeaders })).status).toBe(413);
    const line = `{"i":${'1'.repeat(93)}}\n`; // 100 bytes
    const exact = Buffer.from(line.repeat(maxBody / 100));
    expect(exact.length).toBe(maxBody);
    const ok = await postEvents(emu, { body: await zstd.compress(exact, 3), headers: zstdHeaders });
    expect(ok.json()).toEqual({ successful_rows: maxBody / 100, quarantined_rows: 0 });
    const over = await postEvents(emu, { body: await zstd.compress(Buffer.concat([exact, Buffer.from('\n')]), 3), headers: zstdHeaders });
    expect(over.status).toBe(413);
  });

  it('frames without a declared size (streaming compressors), concatenated, with a skippable frame, are accepted up to --max-body', async () => {
    const dir = await tempDir();
    const maxBody = 3 * BLOCK_MAX;
    const emu = await startEmu({ dataDir: dir, maxBody });
    const rows = Buffer.from(ndjson(3));
    const skippable = Buffer.concat([Buffer.from([0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0]), Buffer.from('skip')]);
    const exact = Buffer.concat([
      frame([raw(rows, true)]),
      skippable,
      frame([rle(0x0a, BLOCK_MAX), rle(0x0a, BLOCK_MAX), rle(0x0a, BLOCK_MAX - rows.length, true)]),
    ]);
    const ok = await postEvents(emu, { body: exact, headers: zstdHeaders });
    expect(ok.status).toBe(200);
    expect(ok.json()).toEqual({ successful_rows: 3, quarantined_rows: 0 });
    expect(await readStored(dir, 'events')).toBe(ndjson(3));
    const over = Buffer.concat([frame([raw(rows, true)]), frame([rle(0x0a, BLOCK_MAX), rle(0x0a, BLOCK_MAX), rle(0x0a, BLOCK_MAX - rows.length + 1, true)])]);
    expect((await postEvents(emu, { body: over, headers: zstdHeaders })).status).toBe(413);
  });

  it('a truncated frame is 400', async () => {
    const emu = await startEmu();
    const whole = frame([raw(Buffer.from(ndjson(2)), true)]);
    expect((await postEvents(emu, { body: whole.subarray(0, whole.length - 3), headers: zstdHeaders })).status).toBe(400);
  });
});
