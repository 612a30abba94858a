// Who may change a path: its owner, and root. The checks shared by the
// agent's state_dir (state/dir-trust.ts) and the commands' control socket
// (control/trust.ts).
import type { Stats } from 'node:fs';

/** Group and other write bits: a directory with either lets others replace what is in it. */
export const WRITABLE_BY_OTHERS = 0o022;
/** Any group or other bit: state directories are the owner's alone (0700). */
export const OPEN_TO_OTHERS = 0o077;

/** This process's uid (-1 where the platform has none: nothing is then ours). */
export function currentUid(): number {
  return process.getuid?.() ?? -1;
}

/** Owned by `uid`, or by root (who may change anything anyway). */
export function ownedByUsOrRoot(st: Pick<Stats, 'uid'>, uid = currentUid()): boolean {
  return st.uid === uid || st.uid === 0;
}

export function modeOf(st: Pick<Stats, 'mode'>): string {
  return (st.mode & 0o777).toString(8).padStart(3, '0');
}
