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


/** Why the text of a token file cannot be the token, or null when it can. */
export function tokenTextProblem(text: string): string | null {
  if (text === '') return 'is empty; write the token into it (a rotation that truncates first is read again when it is written)';
  const bad = tokenCharProblem(text);
  return bad ? `its token ${bad}` : null;
}

/** The token file's text, trimmed (bounded, non-blocking: a FIFO here blocked the process, a device filled memory). */
export async function readTokenFile(file: string): Promise<string> {
  return (await readRegularFile(file, MAX_SECRET_FILE_BYTES)).toString('utf8').trim();
}

export class TokenSource implements LongLived, BearerToken {
  private value: string;
  private stamp = '';
  /** The stamp of a rewrite that was refused: warned about once, not once per poll. */
  private refused = '';
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
      const r = await src.read();
      if ('problem' in r) throw new ConfigError([{ path: 'api.token_file', value: file, why: r.problem }]);
      src.take(r);
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

  /**
   * Re-read the token file: 'changed' when a new token is in use; a problem
   * when the file changed to something that cannot be the token (empty,
   * unreadable, a character no header carries): the token in use stays, as a
   * rewrite may follow. Each refused change is reported once.
   */
  async reload(): Promise<'changed' | 'unchanged' | { problem: string }> {
    if (!this.file) return 'unchanged';
    const r = await this.read();
    if ('problem' in r) {
      if (r.stamp === this.refused) return 'unchanged';
      this.refused = r.stamp;
      return { problem: r.problem };
    }
    if (r.stamp === this.stamp) return 'unchanged';
    const same = r.text === this.value;
    this.take(r);
    return same ? 'unchanged' : 'changed';
  }

  watch(onChange: () => void, onProblem: (problem: string) => void): void {
    if (!this.file) return;
    this.poll.start(async () => {
      const r = await this.reload();
      if (r === 'changed') onChange();
      else if (typeof r === 'object') onProblem(r.problem);
    });
  }

  close(): Promise<void> {
    return this.poll.close();
  }

  destroy(): Promise<void> {
    return this.poll.destroy();
  }

  private async read(): Promise<{ stamp: string; text: string } | { stamp: string; problem: string }> {
    const file = this.file!;
    let stamp = 'unreadable';
    try {
      const st = await fsp.stat(file);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
      if (stamp === this.stamp) return { stamp, text: this.value };
      const text = await readTokenFile(file);
      const problem = tokenTextProblem(text);
      return problem ? { stamp, problem } : { stamp, text };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      return { stamp: `${stamp}:${e.code ?? ''}`, problem: `cannot read it (${e.code ?? e.message}); create it or fix the path` };
    }
  }

  private take(r: { stamp: string; text: string }): void {
    this.stamp = r.stamp;
    this.refused = '';
    this.value = r.text;
  }
}

/** Can users other than the owner and group read `file` (a token file that should be chmod 600)? */
/** The WARN for a token file others may read (run at start, check-config). */
export const TOKEN_FILE_READABLE = 'api.token_file can be read by other users; chmod 600 it (or 640 for a group you trust)';

export async function otherCanRead(file: string): Promise<boolean> {
  const st = await fsp.stat(file).catch(() => null);
  return st !== null && (st.mode & 0o004) !== 0;
}
