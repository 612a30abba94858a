// Bounded concurrency for file-system work: the libuv threadpool runs a few
// syscalls at once, so 10,000 stats one after another waste most of the time
// in round trips, and 10,000 at once queue up memory for nothing.

/** fn over every item, at most `limit` at a time; results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
