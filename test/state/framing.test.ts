import { describe, expect, it } from 'vitest';
import { frame, unframeAll } from '../../src/util/framing.js';

const rec = (i: number) => frame(Buffer.from(JSON.stringify({ t: 'a', id: i })));
const json = (p: Buffer) => p[0] === 0x7b;

describe('unframeAll: torn tail or corruption', () => {
  const three = Buffer.concat([rec(1), rec(2), rec(3)]);

  it('a last record cut short is a torn tail', () => {
    const r = unframeAll(three.subarray(0, three.length - 3), json);
    expect(r).toMatchObject({ tornTail: true, corrupt: [], validBytes: rec(1).length * 2 });
    expect(r.payloads).toHaveLength(2);
  });

  it('zeros from the bad record to the end are a torn tail', () => {
    const r = unframeAll(Buffer.concat([three, Buffer.alloc(40)]), json);
    expect(r).toMatchObject({ tornTail: true, corrupt: [] });
    expect(r.payloads).toHaveLength(3);
  });

  it('a flipped byte mid-file is corruption: reported, and the records after it are read', () => {
    const data = Buffer.from(three);
    const a = rec(1).length;
    data[a + 12] ^= 0x01; // inside record 2's payload
    const r = unframeAll(data, json);
    expect(r.tornTail).toBe(false);
    expect(r.corrupt).toEqual([{ start: a, end: a * 2 }]);
    expect(r.payloads.map((p) => JSON.parse(p.toString()).id)).toEqual([1, 3]);
  });

  it('a flipped byte in the last record is corruption too (its length still fits)', () => {
    const data = Buffer.from(three);
    data[data.length - 2] ^= 0x01;
    const r = unframeAll(data, json);
    expect(r.tornTail).toBe(false);
    expect(r.corrupt).toHaveLength(1);
    expect(r.payloads).toHaveLength(2);
  });
});
