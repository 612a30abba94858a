// state_dir is the agent's alone: whoever may change it may replace its
// control socket (a forged `queue list` printed by root), its queue or its
// checkpoint. At start, before the lock: a directory the agent owns is made
// 0700 whatever it was (a Kubernetes emptyDir is 0777, an old umask left
// 0755), reported when it was looser; one it cannot make safe is refused.
// The commands that write a stopped agent's state_dir apply the same rules
// (secureExistingStateDir).
//
// Rules (owner / mode -> outcome):
//   ours, any mode             -> 0700 (`onTightened` with the old mode when it had group/other bits)
//   root's, not group/other-writable -> kept (root is trusted; the lock reports EACCES if it is not ours to write)
//   root's, group/other-writable     -> refused: we cannot chmod it (an emptyDir mount): use a subdirectory
//   another user's             -> refused: that user can chmod it back at any time
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import { ConfigError, StateDirUnsafeError, StateLayoutError } from '../errors.js';
import { OPEN_TO_OTHERS, WRITABLE_BY_OTHERS, currentUid, modeOf } from '../util/owner.js';

/** Create state_dir (0700) if need be, tighten it if it is ours, refuse it if it is not safe. */
export async function secureStateDir(dir: string, onTightened: (modeWas: string) => void, uid = currentUid()): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    // A file where the directory (or one above it) should be, or a dangling link on the way: the config's to fix (exit 2).
    if (err.code === 'EEXIST' || err.code === 'ENOTDIR' || err.code === 'ENOENT') throw stateDirInTheWay(dir, err.code);
    throw err;
  });
  // stat, not lstat: a state_dir that is a link to a directory is the operator's choice; its target is what others could change.
  await judge(dir, await fsp.stat(dir), onTightened, uid, AGENT);
}

/**
 * The same rules for the commands that write a stopped agent's state_dir
 * (`queue dead-letter`, `dead-letter replay`), except that one that does not
 * exist is not created (false: nothing is kept there). Run as root against
 * another user's state_dir, a replay sent the lines that user had planted,
 * with root's token; `queue dead-letter` left a root-owned state_dir where
 * none was, which the agent's user then could not write.
 */
export async function secureExistingStateDir(dir: string, onTightened: (modeWas: string) => void, uid = currentUid()): Promise<boolean> {
  let st: Stats;
  try {
    st = await fsp.stat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  await judge(dir, st, onTightened, uid, COMMAND);
  return true;
}

/** Who is judging: the words of the refusal and of its fix. */
interface Judge {
  user: string;
  runAs: (owner: number) => string;
}
const AGENT: Judge = { user: "this agent's user", runAs: (owner) => `run the agent as uid ${owner}` };
const COMMAND: Judge = { user: "this command's user", runAs: (owner) => `run this command as the agent's user (uid ${owner}, e.g. with sudo -u)` };

async function judge(dir: string, st: Stats, onTightened: (modeWas: string) => void, uid: number, who: Judge): Promise<void> {
  if (!st.isDirectory()) throw new StateLayoutError(dir, 'not a directory');
  if (st.uid === uid) {
    if ((st.mode & OPEN_TO_OTHERS) !== 0) {
      await fsp.chmod(dir, 0o700);
      onTightened(modeOf(st));
    }
    return;
  }
  if (st.uid !== 0) {
    throw new StateDirUnsafeError(dir, `belongs to uid ${st.uid}, not to ${who.user} (uid ${uid})`, `chown it to uid ${uid}, or ${who.runAs(st.uid)}`);
  }
  if ((st.mode & WRITABLE_BY_OTHERS) !== 0) {
    throw new StateDirUnsafeError(
      dir,
      `is root's and writable by others (mode ${modeOf(st)}), which ${who.user} (uid ${uid}) cannot change`,
      `point state_dir at a directory inside it that the agent creates itself (e.g. ${dir.replace(/\/+$/, '')}/state), or chown it to uid ${uid}`,
    );
  }
}

function stateDirInTheWay(dir: string, code: string): ConfigError {
  return new ConfigError([{ path: 'state_dir', value: dir, why: `cannot be made a directory (${code}: ${code === 'ENOENT' ? 'a link on the way leads nowhere' : 'a file is in the way'}); point state_dir at a directory, or move the file away` }]);
}

/** The error `run` would give for state_dir's path (secureStateDir: a file or a dangling link in the way), found without creating anything (check-config); null when none. */
export async function stateDirPathError(dir: string): Promise<ConfigError | null> {
  for (let p = dir; ; p = path.dirname(p)) {
    const st = await fsp.stat(p).catch((err: NodeJS.ErrnoException) => err.code ?? 'error');
    if (typeof st !== 'string') return st.isDirectory() ? null : stateDirInTheWay(dir, p === dir ? 'EEXIST' : 'ENOTDIR');
    if (st === 'ENOTDIR') return stateDirInTheWay(dir, 'ENOTDIR');
    // Permissions and the like: the start itself says what is wrong.
    if (st !== 'ENOENT') return null;
    if (await fsp.lstat(p).then(() => true, () => false)) return stateDirInTheWay(dir, 'ENOENT');
    if (path.dirname(p) === p) return null;
  }
}
