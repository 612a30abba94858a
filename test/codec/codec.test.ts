import { describe, expect, it } from 'vitest';
import { createCodec, decodeBody } from '../../src/codec/index.js';

const sample = Buffer.from(
  Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ i, msg: `hello world ${i % 37}`, at: 1_800_000_000 + i })).join('\n'),
);

describe('codecs', () => {
  it('zstd honours compression.level (the package wrapper alone would ignore it)', async () => {
    const sizes = await Promise.all([1, 3, 19].map(async (level) => (await createCodec('zstd', level).compress(sample)).length));
    expect(new Set(sizes).size).toBe(3);
    expect(sizes[2]!).toBeLessThan(sizes[0]!);
  });

  it('every codec round-trips through the decoder the emulator uses, and is deterministic', async () => {
    for (const [name, level] of [['zstd', 3], ['gzip', 6], ['none', 0]] as const) {
      const codec = createCodec(name, level);
      const a = await codec.compress(sample);
      const b = await codec.compress(sample);
      expect(a.equals(b)).toBe(true); // retries after a crash re-compress: same bytes
      expect((await decodeBody(codec.contentEncoding ?? undefined, a)).equals(sample)).toBe(true);
    }
  });
});
