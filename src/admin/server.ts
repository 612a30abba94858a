// Admin endpoints on admin.listen: /metrics (Prometheus), /healthz (200 while
// the process runs), /readyz (200, or 503 with the reasons), /status (JSON of
// `spoolship status --json`).
import type http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ConfigError, StateLockedError } from '../errors.js';
import { readLockHolder } from '../state/lock.js';
import type { LongLived } from '../util/lifecycle.js';

// node:http by require, not import: on Node >= 22 the module's ES facade
// reads every export, among them getters that load Node's own copy of
// undici (for its WebSocket; we ship with the npm one): ~40 ms of a bare
// `import` on Node 24 here (bench/README.md, finding 39). The run path
// imports node:http nowhere else.
const { createServer } = createRequire(import.meta.url)('node:http') as typeof http;

export interface Readiness {
  ready: boolean;
  reasons: string[];
}

export interface AdminSources {
  registry: Registry;
  readiness(): Readiness;
  /** The /status report; null while the agent starts. */
  status(): unknown | Promise<unknown>;
}

export function parseListen(listen: string): { host: string; port: number } {
  const i = listen.lastIndexOf(':');
  return { host: listen.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(listen.slice(i + 1)) };
}

export class AdminServer implements LongLived {
  private server: http.Server | null = null;

  constructor(private readonly src: AdminSources) {}

  async start(listen: string): Promise<string> {
    const { host, port } = parseListen(listen);
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const addr = server.address() as AddressInfo;
    return `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://admin');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    switch (url.pathname) {
      case '/metrics': {
        const text = await this.src.registry.metrics();
        res.writeHead(200, { 'content-type': this.src.registry.contentType });
        res.end(text);
        return;
      }
      case '/healthz':
        return json(200, { ok: true });
      case '/readyz': {
        const r = this.src.readiness();
        return json(r.ready ? 200 : 503, r);
      }
      case '/status': {
        const report = await this.src.status();
        // null: the agent is still starting (the address is bound before the state is read).
        return report === null ? json(503, { error: 'the agent is starting' }) : json(200, report);
      }
      default:
        return json(404, { error: `no such endpoint ${url.pathname}; try /metrics, /healthz, /readyz or /status` });
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Open connections are cut either way (a scrape is not worth waiting for). */
  destroy(): Promise<void> {
    return this.close();
  }
}

/**
 * admin.listen, bound: its address. A taken address is a config error
 * naming the key (nothing else has been created yet), unless a live agent
 * holds `stateDir`: then it is that agent (the same config started twice),
 * and the refusal names it, as the state_dir's lock would.
 */
export async function listenAdmin(server: AdminServer, listen: string, stateDir: string): Promise<string> {
  try {
    return await server.start(listen);
  } catch (err) {
    await server.close().catch(() => undefined);
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    const holder = code === 'EADDRINUSE' ? await readLockHolder(stateDir) : null;
    if (holder !== null) throw new StateLockedError(stateDir, holder);
    throw new ConfigError([
      {
        path: 'admin.listen',
        value: listen,
        why: `cannot listen there (${code}${code === 'EADDRINUSE' ? ': another process, maybe another spoolship, uses it' : ''}); choose another host:port, or "" to disable the admin endpoints`,
      },
    ]);
  }
}

/**
 * The admin server of a process whose agent a SIGHUP reload rebuilds
 * (cli/commands/run.ts): one address for the life of the process
 * (admin.listen needs a restart: docs/configuration.md "Reloading"),
 * through which each agent serves in turn.
 */
export class SharedAdmin {
  readonly server: AdminServer;
  url: string | null = null;
  private current: Omit<AdminSources, 'registry'> = { readiness: () => ({ ready: false, reasons: ['starting'] }), status: () => null };

  constructor(registry: Registry) {
    this.server = new AdminServer({ registry, readiness: () => this.current.readiness(), status: () => this.current.status() });
  }

  async listen(listen: string, stateDir: string): Promise<void> {
    this.url = await listenAdmin(this.server, listen, stateDir);
  }

  /** From now on /readyz and /status are this agent's. */
  serve(src: Omit<AdminSources, 'registry'>): void {
    this.current = src;
  }
}
