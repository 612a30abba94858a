// What a command checks before it believes an answer on control.sock: the
// socket is a socket, its owner is the command's own user or root, and the
// state_dir holding it is too and no one else may write it (else the socket
// could be swapped between this check and the connect). Another local user
// once replaced control.sock in a 0777 state_dir and root's `queue list`
// printed the forged batch. The agent makes its state_dir safe at start
// (state/dir-trust.ts); this is the commands' side, for agents of older
// releases and directories changed since.
import { promises as fsp, type Stats } from 'node:fs';
import { ControlUntrustedError } from '../errors.js';
import { WRITABLE_BY_OTHERS, currentUid, modeOf, ownedByUsOrRoot } from '../util/owner.js';

async function statOrNull(p: string, follow: boolean): Promise<Stats | null> {
  try {
    return follow ? await fsp.stat(p) : await fsp.lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** True when `sock` in `stateDir` may be asked; false when there is none (no agent); throws ControlUntrustedError otherwise. */
export async function trustControlSocket(stateDir: string, sock: string): Promise<boolean> {
  const uid = currentUid();
  const dir = await statOrNull(stateDir, true);
  if (!dir) return false;
  if (!ownedByUsOrRoot(dir, uid)) throw new ControlUntrustedError(`state_dir ${stateDir}`, `belongs to uid ${dir.uid}, not to this user (uid ${uid}) or root`);
  if ((dir.mode & WRITABLE_BY_OTHERS) !== 0) throw new ControlUntrustedError(`state_dir ${stateDir}`, `is writable by other users (mode ${modeOf(dir)}; the agent makes it 0700 when it starts)`);
  const st = await statOrNull(sock, false);
  if (!st) return false;
  if (!st.isSocket()) throw new ControlUntrustedError(sock, 'is not a socket (the agent creates only a socket there)');
  if (!ownedByUsOrRoot(st, uid)) throw new ControlUntrustedError(sock, `belongs to uid ${st.uid}, not to this user (uid ${uid}) or root`);
  return true;
}
