// What the state tests share: per-test temp dirs and clean-ups (children
// killed, locks released) run after each test, last registered first.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

export function onCleanup(fn: () => Promise<unknown>): void {
  cleanups.push(fn);
}

export async function tempDir(prefix = 'spoolship-state-'): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), prefix));
  onCleanup(() => rm(d, { recursive: true, force: true }));
  return d;
}
