// Test-only crash points: SPOOLSHIP_TEST_CRASH_AT=<point>[:<n>] (read by the
// `run` command) makes the process SIGKILL itself the n-th time (default 1st)
// it reaches <point>, so process tests can prove a crash inside a write loses
// nothing. Points: journal-write, queue-write, checkpoint-rename. With no
// crash point set, `crashPoint` is a no-op.

export type CrashPointName = 'journal-write' | 'queue-write' | 'checkpoint-rename';

let armed: { name: string; remaining: number } | null = null;

export function armCrashPoint(spec: string | undefined): void {
  if (!spec) return;
  const [name, n] = spec.split(':');
  armed = { name: name!, remaining: Math.max(1, Number(n ?? 1) || 1) };
}

/** True when the caller should crash here (after doing the partial work it simulates). */
export function shouldCrash(name: CrashPointName): boolean {
  if (!armed || armed.name !== name) return false;
  armed.remaining--;
  return armed.remaining === 0;
}

export function crashNow(): never {
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL is not catchable; this line only satisfies the type checker.
  throw new Error('unreachable');
}
