// A real tmpfs of `size` (mount's size= syntax, e.g. "1m") mounted on `dir`,
// for disk-full tests; returns the unmount. Needs root (CAP_SYS_ADMIN) on
// Linux: without it the test fails saying so, never skips.
import { execFileSync } from 'node:child_process';

export function mountTmpfs(dir: string, size: string): () => void {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    throw new Error(`cannot run: mounting a tmpfs failed (${String((err as { stderr?: Buffer }).stderr ?? err).trim()}); this test needs root (CAP_SYS_ADMIN) on Linux`);
  }
  return () => execFileSync('umount', ['-l', dir]);
}
