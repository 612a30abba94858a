// The operator commands' end of the control channel (protocol.ts).
import net from 'node:net';
import path from 'node:path';
import { CONTROL_SOCKET, MAX_SOCKET_PATH_BYTES, controlSocketPath, type ControlAnswer, type ControlRequest } from './protocol.js';
import { trustControlSocket } from './trust.js';

/** The largest answer read (a queue list of many thousand batches fits). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * Ask the agent running on `stateDir`; null when none listens there (no
 * socket, or a stale one). A socket that is not the agent's user's or
 * root's, or in a state_dir others may write, is refused with a
 * ControlUntrustedError before any connect (trust.ts). Any other failure (no
 * permission, a cut connection, `timeoutMs` passed) throws, naming the socket.
 */
export async function askControl(stateDir: string, req: ControlRequest, timeoutMs: number): Promise<ControlAnswer | null> {
  const file = controlSocketPath(stateDir);
  if (!(await trustControlSocket(stateDir, file))) return null;
  const long = Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let socket: net.Socket;
    const connect = () => (socket = net.connect(long ? CONTROL_SOCKET : file));
    if (long) {
      // The same relative bind as the server's (server.ts); a command process has nothing else running.
      const cwd = process.cwd();
      process.chdir(path.dirname(file));
      try {
        connect();
      } finally {
        process.chdir(cwd);
      }
    } else connect();
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the agent did not answer on ${file} within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    socket!.on('connect', () => socket.write(`${JSON.stringify(req)}\n`));
    socket!.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_ANSWER_BYTES) {
        socket.destroy();
        clearTimeout(timer);
        reject(new Error(`the agent's answer on ${file} is longer than ${MAX_ANSWER_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    socket!.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(null);
      else reject(new Error(`cannot reach the agent through ${file}: ${err.code ?? err.message}${err.code === 'EACCES' ? ' (run as the agent\'s user)' : ''}`));
    });
    socket!.on('end', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8').trim();
      try {
        resolve(JSON.parse(text) as ControlAnswer);
      } catch {
        reject(new Error(`the agent's answer on ${file} is not JSON (the agent stopped while answering?)`));
      }
    });
  });
}
