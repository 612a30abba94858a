// Tracks every connection so that close() can destroy them all at once (hung
// requests included), and enforces the platform's connection limit (250 per
// IP): a connection accepted while `maxConnections` are already open is
// marked over the limit; HTTP/2 sessions on it get GOAWAY (code 7), HTTP/1.1
// requests on it get 429.
//
// HTTP/2 hides the session's socket behind a proxy that refuses destroy(), so
// each counted socket carries a reference to itself under SELF: reading
// `session.socket[SELF]` through the proxy yields the real socket, which a
// `reset` fault needs to drop the connection without a GOAWAY.
import type { Server } from 'node:net';
import type { Http2Session } from 'node:http2';
import type { Socket } from 'node:net';

const OVER_LIMIT = Symbol('spoolship.emulator.overLimit');
const SELF = Symbol('spoolship.emulator.socket');

type Tagged = Socket & { [OVER_LIMIT]?: boolean; [SELF]?: Socket };

export class ConnectionTracker {
  readonly #maxConnections: number;
  /** Every accepted TCP socket (TLS handshake or not): what close() destroys. */
  readonly #raw = new Set<Socket>();
  readonly #sessions = new Set<Http2Session>();
  #live = 0;

  constructor(maxConnections: number) {
    this.#maxConnections = maxConnections;
  }

  /** The connections allowed from one address. */
  get limit(): number {
    return this.#maxConnections;
  }

  /**
   * Prepended listeners run before the server's own, so a socket is counted
   * and tagged before an HTTP/2 session is created on it.
   */
  attach(server: Server, tls: boolean): void {
    server.prependListener('connection', (socket: Socket) => {
      this.#raw.add(socket);
      socket.once('close', () => this.#raw.delete(socket));
      if (!tls) this.#count(socket);
    });
    if (tls) server.prependListener('secureConnection', (socket: Socket) => this.#count(socket));
  }

  trackSession(session: Http2Session): void {
    this.#sessions.add(session);
    session.once('close', () => this.#sessions.delete(session));
  }

  isOverLimit(socket: Socket | null | undefined): boolean {
    return readTag(socket, OVER_LIMIT) === true;
  }

  /** The real socket behind an HTTP/2 session's proxy (or the socket itself). */
  realSocket(socket: Socket | null | undefined): Socket | null {
    return (readTag(socket, SELF) as Socket | undefined) ?? null;
  }

  get liveConnections(): number {
    return this.#live;
  }

  destroyAll(): void {
    for (const session of this.#sessions) session.destroy();
    for (const socket of this.#raw) socket.destroy();
  }

  #count(socket: Socket): void {
    const tagged = socket as Tagged;
    tagged[SELF] = socket;
    tagged[OVER_LIMIT] = this.#live >= this.#maxConnections;
    this.#live += 1;
    socket.once('close', () => {
      this.#live -= 1;
    });
  }
}

/** The HTTP/2 socket proxy throws once its session has let go of the socket. */
function readTag(socket: Socket | null | undefined, tag: typeof OVER_LIMIT | typeof SELF): unknown {
  try {
    return (socket as Tagged | null | undefined)?.[tag];
  } catch {
    return undefined;
  }
}
