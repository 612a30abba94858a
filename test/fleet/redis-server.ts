// A real redis-server for the shared-budget tests: its own free port, its own
// temp dir, no persistence (a restart comes back empty, like a Redis pod that
// was rescheduled), stopped by PID. `.ci/run` installs the Debian package.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const START_TIMEOUT_MS = 10_000;

export class RedisServer {
  private child: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    readonly dir: string,
    /** More redis-server arguments (ACL users, TLS); `command()` needs a plain, open default user. */
    private readonly extra: string[] = [],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  static async start(extra: (dir: string) => string[] = () => []): Promise<RedisServer> {
    assertRedisInstalled();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-redis-'));
    const server = new RedisServer(await freePort(), dir, extra(dir));
    await server.restart();
    return server;
  }

  /** Starts (again) on the same port, empty. */
  async restart(): Promise<void> {
    if (this.child) throw new Error('redis-server is already running');
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--logfile', path.join(this.dir, 'redis.log'), ...this.extra],
      { stdio: 'ignore' },
    );
    this.child = child;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await ping(this.port))) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}; see ${this.dir}/redis.log`);
      if (Date.now() > deadline) throw new Error(`redis-server did not answer PING on port ${this.port} within ${START_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Kills the server by PID (SIGKILL: a crash, not a clean shutdown) and waits for it to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(child.pid!, signal);
    await exited;
  }

  async destroy(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }

  /** Runs one command over a plain socket; returns a simple, integer or bulk reply as text (null for a nil bulk). */
  command(...args: string[]): Promise<string | null> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(this.port, '127.0.0.1');
      let buf = '';
      sock.setTimeout(2000, () => sock.destroy(new Error('redis command timed out')));
      sock.on('error', reject);
      sock.on('data', (d) => {
        buf += d.toString('utf8');
        const reply = parseReply(buf);
        if (reply === undefined) return;
        sock.end();
        if (reply instanceof Error) reject(reply);
        else resolve(reply);
      });
      sock.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
  }
}

/** undefined while incomplete. */
function parseReply(buf: string): string | null | Error | undefined {
  const eol = buf.indexOf('\r\n');
  if (eol === -1) return undefined;
  const head = buf.slice(1, eol);
  switch (buf[0]) {
    case '+':
    case ':':
      return head;
    case '-':
      return new Error(head);
    case '$': {
      const len = Number(head);
      if (len < 0) return null;
      return buf.length >= eol + 2 + len + 2 ? buf.slice(eol + 2, eol + 2 + len) : undefined;
    }
    default:
      return new Error(`unexpected Redis reply: ${buf}`);
  }
}

function assertRedisInstalled(): void {
  const r = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  if (r.error || r.status !== 0) {
    throw new Error('redis-server not found: install it (`apt-get install -y redis-server`; .ci/run does this on a fresh machine)');
  }
}

async function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = '';
    sock.setTimeout(500, () => {
      sock.destroy();
      resolve(false);
    });
    sock.on('error', () => resolve(false));
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      if (buf.includes('\r\n')) {
        sock.end();
        resolve(buf.startsWith('+PONG'));
      }
    });
    sock.write('PING\r\n');
  });
}

/** A port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
