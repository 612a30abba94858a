// The kernel's lock on a directory, held by a child `flock` program
// (util-linux; Node has no flock(2)):
//
//   flock -o -E 75 (-n | -w SECONDS) DIR cat
//
// flock(1) opens DIR, takes an exclusive flock(2) on it and runs `cat`,
// which echoes the handshake line we wrote to its stdin and then reads on
// until EOF. The lock belongs to that open directory, so the kernel lets it
// go when the flock process ends, and it ends when our end of the pipe
// closes: at release(), or when this process dies in any way, kill -9
// included (the kernel closes the pipe, `cat` reads EOF and exits, flock
// follows). `-o`: only flock holds the lock, not `cat`, so a flock process
// killed by someone is a lock let go, and seen as such (onLost).
//
// The directory itself, not a file in it: its inode lasts as long as the
// directory (which dir-watch.ts guards), whereas a lock file that is ever
// removed or replaced lets two processes each hold a lock on a different
// inode under the same name.
//
// Outcomes, told by the handshake and the exit code, never by timing:
//   the handshake line comes back on stdout       -> held
//   exit FLOCK_BUSY_EXIT before the handshake     -> another process holds it
//   the program cannot be spawned: ENOENT         -> no flock program (flock_missing)
//   any other exit or spawn error                 -> flock unusable here
//     (flock_failed: a file system without flock(2), a flock(1) without -E)
//
// The child runs in its own session (detached): Ctrl-C at a terminal signals
// the whole foreground process group, and the lock must last while the agent
// drains, not end with the keypress.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

/** EX_TEMPFAIL: flock(1) exits with it for nothing else than "held by another" (its -E). */
export const FLOCK_BUSY_EXIT = 75;
const HANDSHAKE = 'spoolship: locked\n';
/** Kept of the program's stderr for the fallback's log line. */
const STDERR_KEEP_BYTES = 1024;
/** Beyond its own wait, a flock that has not answered (a hung mount) is killed and judged unusable. */
const ANSWER_SLACK_MS = 10_000;
/** A flock child that has not ended this long after its pipe closed (stopped, stuck) is killed, which lets the lock go. */
const RELEASE_WAIT_MS = 5000;

export interface KernelLock {
  /** Called once if the lock ends while held (someone killed the flock process). */
  onLost(fn: (detail: string) => void): void;
  /** Close the pipe and wait for the child to end: the lock is free when this resolves. Idempotent. */
  release(): Promise<void>;
}

export type FlockOutcome =
  | { kind: 'held'; lock: KernelLock }
  | { kind: 'busy' }
  | { kind: 'unavailable'; reason: 'flock_missing' | 'flock_failed'; detail: string };

export interface FlockOptions {
  /** The flock program, found on PATH (tests name one that does not exist). */
  program: string;
  /** 0: answer at once (-n); otherwise wait up to this long for a holder to let go (-w). */
  waitMs: number;
}

export function takeFlock(dir: string, o: FlockOptions): Promise<FlockOutcome> {
  const mode = o.waitMs > 0 ? ['-w', String(o.waitMs / 1000)] : ['-n'];
  return new Promise((resolve) => {
    let settled = false;
    let answerTimer: NodeJS.Timeout | undefined;
    const settle = (outcome: FlockOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(answerTimer);
      resolve(outcome);
    };
    const child = spawn(o.program, ['-o', '-E', String(FLOCK_BUSY_EXIT), ...mode, dir, 'cat'], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    answerTimer = setTimeout(() => {
      child.kill('SIGKILL');
      settle({ kind: 'unavailable', reason: 'flock_failed', detail: `${o.program} did not answer within ${o.waitMs + ANSWER_SLACK_MS} ms` });
    }, o.waitMs + ANSWER_SLACK_MS);
    let stdout = '';
    let stderr = '';
    // EPIPE: the child ended before reading the handshake; its exit says why.
    child.stdin!.on('error', () => undefined);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      if (settled) return;
      stdout += d;
      if (stdout.includes(HANDSHAKE)) settle({ kind: 'held', lock: heldBy(child) });
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      if (stderr.length < STDERR_KEEP_BYTES) stderr += d.slice(0, STDERR_KEEP_BYTES - stderr.length);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      settle({ kind: 'unavailable', reason: err.code === 'ENOENT' ? 'flock_missing' : 'flock_failed', detail: `${o.program}: ${err.code ?? err.message}` });
    });
    // 'close', not 'exit': every byte it wrote has been read by then.
    child.on('close', (code, signal) => {
      if (code === FLOCK_BUSY_EXIT) return settle({ kind: 'busy' });
      const said = stderr.trim().split('\n')[0];
      settle({ kind: 'unavailable', reason: 'flock_failed', detail: `${o.program} exited with ${code ?? signal}${said ? `: ${said}` : ''}` });
    });
    child.stdin!.write(HANDSHAKE);
  });
}

function heldBy(child: ChildProcess): KernelLock {
  let releasing: Promise<void> | null = null;
  let lost: ((detail: string) => void) | null = null;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (!releasing) lost?.(`the flock process (pid ${child.pid}) ended with ${code ?? signal}`);
  });
  // A lock keeps no process up, as a lock held in the kernel would not: the
  // owner's stop releases it; a process that ends without it lets it go too.
  child.unref();
  for (const s of [child.stdin, child.stdout, child.stderr]) (s as Socket | null)?.unref();
  return {
    onLost(fn) {
      lost = fn;
    },
    release() {
      releasing ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        // Kept up until the child has gone: the lock is free when this resolves.
        child.ref();
        child.stdin!.end();
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), RELEASE_WAIT_MS)));
        if ((await Promise.race([exited, late])) === 'late') {
          child.kill('SIGKILL');
          await exited;
        }
        clearTimeout(timer);
      })();
      return releasing;
    },
  };
}
