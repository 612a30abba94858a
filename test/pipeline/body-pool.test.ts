// The pipeline's pool of compressed-body buffers (src/pipeline/body-pool.ts).
import { describe, expect, it } from 'vitest';
import { BodyPool } from '../../src/pipeline/body-pool.js';

const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);

describe('BodyPool', () => {
  it('copies bodies, and reuses a released buffer for the next body that fits', () => {
    const pool = new BodyPool(4);
    const a = pool.copy([bytes(1_700_000, 1)]);
    expect(a.equals(bytes(1_700_000, 1))).toBe(true);
    const b = pool.copy([bytes(1_600_000, 2)]);
    expect(b.buffer).not.toBe(a.buffer);
    pool.release(a);
    const c = pool.copy([bytes(1_650_000, 3)]);
    expect(c.buffer).toBe(a.buffer); // same memory, new content
    expect(c.length).toBe(1_650_000);
    expect(c.equals(bytes(1_650_000, 3))).toBe(true);
    expect(b.equals(bytes(1_600_000, 2))).toBe(true); // a body on loan is never touched
  });

  it('takes back only its own buffers, once each, and keeps at most `keep` of them', () => {
    const pool = new BodyPool(2);
    pool.release(bytes(10, 0)); // not from the pool
    expect(pool.spare).toBe(0);
    const loans = [1, 2, 3].map((i) => pool.copy([bytes(1000, i)]));
    pool.release(loans[0]!);
    pool.release(loans[0]!); // twice: the second is ignored
    expect(pool.spare).toBe(1);
    pool.release(loans[1]!);
    pool.release(loans[2]!);
    expect(pool.spare).toBe(2);
    // Two different loans come out of the two spare buffers.
    const x = pool.copy([bytes(1000, 7)]);
    const y = pool.copy([bytes(1000, 8)]);
    expect(x.buffer).not.toBe(y.buffer);
    expect(x.equals(bytes(1000, 7)) && y.equals(bytes(1000, 8))).toBe(true);
  });

  it('allocates anew when no spare buffer is large enough', () => {
    const pool = new BodyPool(4);
    const small = pool.copy([bytes(100_000, 1)]);
    pool.release(small);
    const big = pool.copy([bytes(3_000_000, 2)]);
    expect(big.buffer).not.toBe(small.buffer);
    expect(pool.spare).toBe(1);
  });
});
