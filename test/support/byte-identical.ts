// SPEC section 3, "Byte-identical retries", checked on what the emulator
// recorded (its records hash each body as received and decoded).
import { expect } from 'vitest';

/**
 * SPEC section 3, byte-identical retries: every request carrying the same
 * decoded body (one batch, sent again) carried the same encoded bytes. The
 * emulator's own dedup hashes decoded bodies, so a retry compressed anew
 * would pass it unseen. Returns how many batches were sent more than once.
 */
export function expectByteIdenticalRetries(records: ReadonlyArray<{ bodySha1: string | null; decodedSha1: string | null }>): number {
  const wires = new Map<string, Set<string>>();
  const sends = new Map<string, number>();
  for (const r of records) {
    if (r.decodedSha1 === null || r.bodySha1 === null) continue;
    let set = wires.get(r.decodedSha1);
    if (!set) wires.set(r.decodedSha1, (set = new Set()));
    set.add(r.bodySha1);
    sends.set(r.decodedSha1, (sends.get(r.decodedSha1) ?? 0) + 1);
  }
  const differing = [...wires].filter(([, s]) => s.size > 1).map(([d, s]) => `${d.slice(0, 8)}: ${s.size} encodings`);
  expect(differing, 'batches sent again with other encoded bytes').toEqual([]);
  return [...sends.values()].filter((n) => n > 1).length;
}
