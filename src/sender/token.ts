// The API token: from api.token, or from api.token_file, which is re-read on
// SIGHUP and whenever its modification time or size changes (polled, because
// a Kubernetes Secret update swaps a symlink and inotify misses it).
import { MAX_SECRET_FILE_BYTES, readRegularFile } from '../util/bounded-read.js';
import { promises as fsp } from 'node:fs';
import { ConfigError } from '../errors.js';
import type { LongLived } from '../util/lifecycle.js';
import type { BearerToken } from './http-client.js';
import { FilePoll } from '../util/file-poll.js';
import { tokenCharProblem } from '../util/token-chars.js';


export class TokenSource implements LongLived, BearerToken {
  private value: string;
  private stamp = '';
  private readonly poll = new FilePoll();

  private constructor(
    private readonly file: string | null,
    initial: string,
  ) {
    this.value = initial;
  }

  static async create(token: string | null, file: string | null): Promise<TokenSource> {
    if (file) {
      const src = new TokenSource(file, '');
      await src.reload();
      return src;
    }
    if (!token) {
      throw new ConfigError([
        { path: 'api.token', value: null, why: 'no API token: set api.token (or SPOOLSHIP_TOKEN), or api.token_file' },
      ]);
    }
    return new TokenSource(null, token);
  }

  get(): string {
    return this.value;
  }

  /** Re-read the token file; true when the token changed. */
  async reload(): Promise<boolean> {
    if (!this.file) return false;
    let text: string;
    let stamp: string;
    try {
      const st = await fsp.stat(this.file);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
      if (stamp === this.stamp) return false;
      // Non-blocking and bounded: a FIFO here blocked the process, a device filled memory.
      text = (await readRegularFile(this.file, MAX_SECRET_FILE_BYTES)).toString('utf8').trim();
    } catch (err) {
      if (this.value === '') {
        throw new ConfigError([{ path: 'api.token_file', value: this.file, why: `cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'}); create it or fix the path` }]);
      }
      return false;
    }
    const bad = tokenCharProblem(text);
    if (bad) {
      // At start a config error; later the token in use is kept (a rewrite may follow).
      if (this.value === '') throw new ConfigError([{ path: 'api.token_file', value: this.file, why: `its token ${bad}` }]);
      return false;
    }
    this.stamp = stamp;
    if (text === this.value) return false;
    this.value = text;
    return true;
  }

  watch(onChange: () => void): void {
    if (!this.file) return;
    this.poll.start(async () => {
      if (await this.reload()) onChange();
    });
  }

  close(): Promise<void> {
    return this.poll.close();
  }

  destroy(): Promise<void> {
    return this.poll.destroy();
  }
}

/** Can users other than the owner and group read `file` (a token file that should be chmod 600)? */
/** The WARN for a token file others may read (run at start, check-config). */
export const TOKEN_FILE_READABLE = 'api.token_file can be read by other users; chmod 600 it (or 640 for a group you trust)';

export async function otherCanRead(file: string): Promise<boolean> {
  const st = await fsp.stat(file).catch(() => null);
  return st !== null && (st.mode & 0o004) !== 0;
}
