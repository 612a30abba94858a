// Bytes that do not compress and do not repeat, the same for the same seed:
// bodies and queue records whose every byte matters (a torn write, a spill
// read back) without a corpus on disk.

/** `n` pseudo-random bytes from `seed` (a linear congruential generator). */
export function noise(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}
