// Test-only crash points: SPOOLSHIP_TEST_CRASH_AT=<point>[:<n>] (read by the
// `run` command) makes the process SIGKILL itself the n-th time (default 1st)
// it reaches <point>, so process tests can prove a crash inside a write loses
// nothing. Points: journal-write, queue-write, queue-ack, checkpoint-rename. With no
// crash point set, `shouldCrash` is always false.
//
// Just before the kill the process writes one log line to stderr (event
// `crash_point`, with `at`, its own Date.now()): the test's duplicate bound
// ("batches in flight plus those acknowledged in the last 100 ms") is timed
// from the instant of the kill, which the parent only sees later, when the
// exit reaches it, and later still on a loaded machine.
import { writeSync } from 'node:fs';

export type CrashPointName = 'journal-write' | 'queue-write' | 'queue-ack' | 'checkpoint-rename';

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
  const point = armed?.name ?? 'unknown';
  const at = Date.now();
  const line = { level: 'warn', time: new Date(at).toISOString(), pid: process.pid, event: 'crash_point', point, at, msg: `test crash point ${point}: SIGKILL now` };
  // The logger writes synchronously too, so this line never lands inside another.
  writeSync(2, `${JSON.stringify(line)}\n`);
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL is not catchable; this line only satisfies the type checker.
  throw new Error('unreachable');
}
