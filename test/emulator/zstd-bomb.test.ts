// The zstd binding decodes a body whole before its size can be checked: a
// body whose headers say it is too large must never reach it.
import { describe, expect, it, vi } from 'vitest';

const decoded: number[] = [];
vi.mock('../../src/codec/index.js', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../src/codec/index.js')>();
  return {
    ...orig,
    decodeBody: async (enc: string | undefined, body: Buffer, max?: number) => {
      decoded.push(body.length);
      return orig.decodeBody(enc, body, max);
    },
  };
});

const { createCodec } = await import('../../src/codec/index.js');
const { decodeEventsBody } = await import('../../src/emulator/events/decode.js');

describe('decodeEventsBody with zstd', () => {
  it('answers 413 for a bomb from its block headers, without decoding it; decodes a body within the limit', async () => {
    const zstd = createCodec('zstd', 3);
    const bomb = await zstd.compress(Buffer.alloc(64 * 1024 * 1024, 0x61));
    expect(await decodeEventsBody('zstd', bomb, 10_000_000)).toMatchObject({ ok: false, status: 413 });
    expect(decoded).toEqual([]);
    const fine = await zstd.compress(Buffer.from('{"a":1}\n'));
    expect(await decodeEventsBody('zstd', fine, 10_000_000)).toMatchObject({ ok: true });
    expect(decoded).toEqual([fine.length]);
  });
});
