// A file re-read on a timer, for the secrets the agent follows (the token
// file, the client certificate and key): a Kubernetes Secret update swaps a
// symlink and inotify misses it, so they are polled. The timer keeps no
// process alive; a failed look is the next look's to retry.
import type { LongLived } from './lifecycle.js';

/** How often a followed secret file is looked at. */
export const FILE_POLL_MS = 2000;

export class FilePoll implements LongLived {
  private timer: NodeJS.Timeout | null = null;

  /** Call `look` every FILE_POLL_MS until closed (once started, a second start does nothing). */
  start(look: () => Promise<void>): void {
    this.timer ??= setInterval(() => void look().catch(() => undefined), FILE_POLL_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  destroy(): Promise<void> {
    return this.close();
  }
}
