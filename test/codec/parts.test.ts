// A large zstd body is its parts' frames one after another (codec/parts.ts):
// where a part ends depends on the bytes alone, the frames decode as one
// body, and a body compressed again (a batch re-formed after a crash) is
// byte-identical however its parts' compressions were scheduled.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCodec, decodeBody, type CompressTurn } from '../../src/codec/index.js';
import { PART_BYTES, partEnds, partsOf } from '../../src/codec/parts.js';
import { zstdDecodedBound } from '../../src/emulator/events/zstd-bound.js';

/** NDJSON of about `bytes` bytes, lines of varied length and content (the same for the same seed). */
function ndjson(bytes: number, seed: number): Buffer {
  const lines: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const line = JSON.stringify({ i, msg: `event ${(i * 7919 + seed) % 1000}`, pad: 'x'.repeat((i * 31 + seed) % 300) });
    lines.push(line);
    n += line.length + 1;
  }
  return Buffer.from(lines.join('\n') + '\n');
}

/** The parts' rule written plainly: from each part's start, take bytes up to and including the first newline at or after partBytes into it. */
function plainEnds(data: Buffer, partBytes: number): number[] {
  const ends: number[] = [];
  let start = 0;
  let i = 0;
  while (i < data.length) {
    if (data[i] === 10 && i + 1 - start >= partBytes && i + 1 < data.length) {
      ends.push(i + 1);
      start = i + 1;
    }
    i++;
  }
  ends.push(data.length);
  return ends;
}

describe('parts of a body', () => {
  it('end at the first newline at or after the part size, as the rule written plainly says, for any bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(10, 97, 97, 97, 97, 97, 97, 97, 97, 97), { maxLength: 400 }), fc.integer({ min: 1, max: 40 }), (bytes, partBytes) => {
        const data = Buffer.from(bytes);
        expect(partEnds(data, partBytes)).toEqual(plainEnds(data, partBytes));
        expect(Buffer.concat(partsOf(data, partBytes)).equals(data)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('a body without a newline past the part size is one part; an empty body too', () => {
    expect(partEnds(Buffer.alloc(3 * PART_BYTES, 97))).toEqual([3 * PART_BYTES]);
    expect(partEnds(Buffer.alloc(0))).toEqual([0]);
    expect(partEnds(Buffer.from('a\n'.repeat(100)))).toEqual([200]);
  });

  it('zstd: a 5 MiB batch is 5 frames that decode, and are sized by the emulator, as one body', async () => {
    const data = ndjson(5 * PART_BYTES - 5000, 1);
    const codec = createCodec('zstd', 3);
    const frames = await codec.compressFrames(data);
    expect(frames).toHaveLength(partEnds(data).length);
    expect(frames.length).toBe(5);
    const body = Buffer.concat(frames);
    expect((await decodeBody('zstd', body)).equals(data)).toBe(true);
    expect(zstdDecodedBound(body)?.upperBytes).toBeGreaterThanOrEqual(data.length);
    expect((await codec.compress(data)).equals(body)).toBe(true);
  });

  it("zstd: the parts compress at once, each in its own turn, and the body is the same whichever finishes first", async () => {
    const data = ndjson(4 * PART_BYTES + 10, 2);
    const codec = createCodec('zstd', 3);
    const plain = Buffer.concat(await codec.compressFrames(data));
    // Every part starts before any is let go, and they are let go last first.
    let started = 0;
    const gates: Array<() => void> = [];
    const turn: CompressTurn = async (compress) => {
      started++;
      await new Promise<void>((go) => gates.push(go));
      return compress();
    };
    const pending = codec.compressFrames(data, turn);
    await until(() => started === 4);
    for (const go of gates.reverse()) {
      go();
      await new Promise((r) => setImmediate(r));
    }
    expect(Buffer.concat(await pending).equals(plain)).toBe(true);
  });

  it('gzip and none stay one member / the bytes themselves', async () => {
    const data = ndjson(3 * PART_BYTES, 3);
    expect(await createCodec('gzip', 6).compressFrames(data)).toHaveLength(1);
    const none = await createCodec('none', 0).compressFrames(data);
    expect(none).toHaveLength(1);
    expect(none[0]).toBe(data);
  });
});

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}
