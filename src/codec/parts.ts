// Parts of one body, compressed in parallel as frames of their own.
//
// A zstd body may be several frames one after another (RFC 8878 section 3:
// "one or more frames"); decoders, the platform's and ours, read them as one
// stream. Cutting a batch into parts of ~1 MiB lets compression.threads
// threads work on one or two batches at once instead of one batch each: on
// 16 cores that is 2-3 raw batches of 10 MB waiting for compression instead of
// 16 (bench/README.md, finding 38). The ratio does not suffer: zstd -3's
// window is about that size, and the bench corpus came out 1.7 % smaller cut
// into 1 MiB parts than whole.
//
// A retry sends the bytes it kept, but a batch re-formed after a crash is
// compressed again and must come out byte-identical: so where a part ends is
// a pure function of the batch's bytes (the first newline at or after
// PART_BYTES past the part's start, or the end of the batch), never of the
// threads, the timing or the order the parts finish in.

/** Raw bytes of a part before it looks for the newline that ends it. */
export const PART_BYTES = 1024 * 1024;

/**
 * Where each part of `data` ends (exclusive offsets, the last is
 * data.length): a part ends after the first newline at or after `partBytes`
 * bytes into it. Data with no newline there is one part to its end.
 */
export function partEnds(data: Buffer, partBytes: number = PART_BYTES): number[] {
  const ends: number[] = [];
  let start = 0;
  while (data.length - start > partBytes) {
    const nl = data.indexOf(10, start + partBytes - 1);
    if (nl < 0 || nl + 1 === data.length) break;
    ends.push(nl + 1);
    start = nl + 1;
  }
  ends.push(data.length);
  return ends;
}

/** The parts of `data` as views (no copy), cut by partEnds. */
export function partsOf(data: Buffer, partBytes: number = PART_BYTES): Buffer[] {
  let start = 0;
  return partEnds(data, partBytes).map((end) => {
    const part = data.subarray(start, end);
    start = end;
    return part;
  });
}
