// The agent's end of the control channel (protocol.ts): a Unix socket in
// state_dir, created at start (the state lock is held, so a socket file left
// there is stale) and removed at stop.
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import type { LongLived } from '../util/lifecycle.js';
import { CONTROL_SOCKET, MAX_REQUEST_BYTES, MAX_SOCKET_PATH_BYTES, controlSocketPath, type ControlAnswer, type ControlRequest } from './protocol.js';

/** Answers each request on the socket (QueueOps implements it). */
export interface ControlHandler {
  handle(req: ControlRequest): Promise<ControlAnswer>;
}

export class ControlServer implements LongLived {
  private readonly sockets = new Set<net.Socket>();
  private closed = false;

  private constructor(
    private readonly server: net.Server,
    readonly path: string,
  ) {}

  static async listen(stateDir: string, handler: ControlHandler): Promise<ControlServer> {
    const file = controlSocketPath(stateDir);
    await fsp.rm(file, { force: true });
    const server = net.createServer();
    const control = new ControlServer(server, file);
    server.on('connection', (socket) => control.serve(socket, handler));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.once('listening', () => {
        server.off('error', reject);
        resolve();
      });
      if (Buffer.byteLength(file) <= MAX_SOCKET_PATH_BYTES) server.listen(file);
      else bindRelative(stateDir, () => server.listen(CONTROL_SOCKET));
    });
    return control;
  }

  /** Stop accepting; connections still open are cut. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await fsp.rm(this.path, { force: true }).catch(() => undefined);
  }

  destroy(): Promise<void> {
    return this.close();
  }

  private serve(socket: net.Socket, handler: ControlHandler): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      const nl = chunk.indexOf(10);
      if (nl === -1 && size <= MAX_REQUEST_BYTES) return;
      socket.off('data', onData);
      if (nl === -1) return answer(socket, { ok: false, code: 2, error: `request longer than ${MAX_REQUEST_BYTES} bytes` });
      const line = Buffer.concat(chunks).toString('utf8');
      const req = parseRequest(line.slice(0, line.indexOf('\n')));
      if (typeof req === 'string') return answer(socket, { ok: false, code: 2, error: req });
      handler.handle(req).then(
        (a) => answer(socket, a),
        (err: unknown) => answer(socket, { ok: false, code: 1, error: err instanceof Error ? err.message : String(err) }),
      );
    };
    socket.on('data', onData);
  }
}

function answer(socket: net.Socket, a: ControlAnswer): void {
  if (!socket.destroyed) socket.end(`${JSON.stringify(a)}\n`);
}

function parseRequest(line: string): ControlRequest | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return 'request is not JSON';
  }
  const r = v as Partial<Record<string, unknown>>;
  if (r === null || typeof r !== 'object') return 'request is not an object';
  if (r.datasource !== undefined && typeof r.datasource !== 'string') return 'datasource must be a string';
  const datasource = r.datasource as string | undefined;
  if (r.op === 'queue_list') return { op: 'queue_list', datasource };
  if (r.op === 'dead_letters_changed') return { op: 'dead_letters_changed' };
  if (r.op === 'status') return { op: 'status' };
  if (r.op === 'queue_dead_letter') {
    if (!Array.isArray(r.ids) || !r.ids.every((x) => Number.isSafeInteger(x) && (x as number) >= 0)) return 'ids must be batch ids';
    return { op: 'queue_dead_letter', ids: r.ids as number[], datasource };
  }
  return `unknown op ${JSON.stringify(r.op)}`;
}

/**
 * A socket path over sun_path's limit is bound relative to state_dir: the
 * working directory changes for the synchronous bind only (nothing else runs
 * in between; the agent uses absolute paths everywhere).
 */
function bindRelative(dir: string, bind: () => void): void {
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    bind();
  } finally {
    process.chdir(cwd);
  }
}
