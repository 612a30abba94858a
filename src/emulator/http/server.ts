// The emulator's listening socket: plain HTTP/1.1, or with TLS an HTTP/2
// server that also speaks HTTP/1.1 (ALPN), like the platform. close() does not
// wait for clients: it destroys every session and socket, hung requests
// included, so tests and the CLI stop at once.
import type http from 'node:http';
import type http2 from 'node:http2';
import { createRequire } from 'node:module';
import type { AddressInfo, Server } from 'node:net';
import { ListenError } from '../errors.js';
import type { TlsMaterial } from '../tls-cert.js';
import { ConnectionTracker } from './connections.js';
import type { AnyResponse } from './respond.js';

// By require, not import, as in admin/server.ts: on Node >= 22 an ES import
// of node:http reads every export, among them getters that load Node's own
// copy of undici, which neither the emulator nor the agent uses.
const load = createRequire(import.meta.url);
const { createServer } = load('node:http') as typeof http;
const { createSecureServer, constants: h2constants } = load('node:http2') as typeof http2;

export interface HttpServerOptions {
  tls: TlsMaterial | null;
  /** With tls: the CA whose client certificates are required (mutual TLS); null: none asked. */
  clientCa?: Buffer | null;
  maxConnections: number;
}

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: AnyResponse) => Promise<void>;

/** Connections accepted at most, as a multiple of maxConnections (the rest are dropped on accept). */
export const HARD_LIMIT_FACTOR = 2;

export class EmulatorHttpServer {
  readonly connections: ConnectionTracker;
  readonly #server: Server;
  #closing: Promise<void> | null = null;

  constructor(opts: HttpServerOptions, handler: (tracker: ConnectionTracker) => Handler) {
    this.connections = new ConnectionTracker(opts.maxConnections);
    const onRequest = handler(this.connections);
    const listener = (req: http.IncomingMessage | http2.Http2ServerRequest, res: AnyResponse): void => {
      onRequest(req, res).catch((err: unknown) => {
        // A bug in a handler must not take the emulator down; the client sees the drop.
        process.emitWarning(`emulator request handler failed: ${(err as Error)?.stack ?? String(err)}`);
        res.destroy();
      });
    };
    if (opts.tls) {
      // With a client CA the handshake itself refuses a client without a
      // certificate of that CA, as a platform behind mutual TLS does.
      const mutual = opts.clientCa ? { ca: opts.clientCa, requestCert: true, rejectUnauthorized: true } : {};
      const server = createSecureServer({ allowHTTP1: true, cert: opts.tls.cert, key: opts.tls.key, ...mutual }, listener);
      server.on('session', (session) => this.#onSession(session));
      // Session and stream errors (peer resets) are the client's business; keep them off 'error'.
      server.on('sessionError', () => {});
      server.on('tlsClientError', () => {});
      this.#server = server;
    } else {
      this.#server = createServer(listener);
    }
    this.connections.attach(this.#server, opts.tls !== null);
    // Beyond the platform's limit connections are answered 429 (or GOAWAY);
    // beyond twice it they are dropped at once: 3,000 half-sent POSTs held
    // 3,021 descriptors, as many as a client cared to open.
    this.#server.maxConnections = opts.maxConnections * HARD_LIMIT_FACTOR;
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(new ListenError(`${host}:${port}`, err));
      this.#server.once('error', onError);
      this.#server.listen(port, host, () => {
        this.#server.off('error', onError);
        resolve(this.#server.address() as AddressInfo);
      });
    });
  }

  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.connections.destroyAll();
    });
    return this.#closing;
  }

  #onSession(session: http2.ServerHttp2Session): void {
    this.connections.trackSession(session);
    session.on('error', () => {});
    if (this.connections.isOverLimit(session.socket as never)) {
      // Too many alive connections: what the platform answers on HTTP/2.
      session.destroy(new Error('too many connections'), h2constants.NGHTTP2_REFUSED_STREAM);
    }
  }
}
