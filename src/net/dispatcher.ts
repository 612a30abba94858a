// The undici dispatcher every request to the API goes through: a Pool to
// the API's origin, or undici's own proxy agents when a forward proxy is on
// the route (src/config/proxy.ts). Through a proxy the connection is a
// CONNECT tunnel for https:// and http:// targets alike, so the pool's
// settings (max_connections, timeouts, HTTP/2 by ALPN inside the tunnel)
// hold either way and every proxy failure takes the one path below.
//
// A proxy failure must name the proxy, not look like the API's own: a
// refused CONNECT (407 or 401 for credentials, 403 for a policy) or a proxy
// that cannot be reached becomes a ProxyFailure whose code says so and whose
// message shows the proxy with its password as ***.
import type { Dispatcher, Pool } from 'undici';
import type { Socket } from 'node:net';
import type { ProxyRoute } from '../config/proxy.js';
import type { TlsFailureMemo } from './tls-failure.js';

/** The parts of undici used here (the lazily imported module, or named imports). */
export type Undici = Pick<typeof import('undici'), 'Pool' | 'ProxyAgent' | 'EnvHttpProxyAgent' | 'buildConnector'>;

export interface TlsMaterial {
  /** Extra CA bundle (api.ca_file). */
  ca?: Buffer;
  /** Mutual TLS: the client certificate and its key (PEM). */
  cert?: Buffer;
  key?: Buffer;
}

export interface DispatcherOptions {
  route: ProxyRoute;
  tls: TlsMaterial;
  /** Sockets to the API's origin (limits.max_connections); null: undici's default (no limit). */
  connections: number | null;
  allowH2: boolean;
  /** Headers and body timeouts. */
  timeoutMs: number;
  /** Shown every new TLS connection to the API, to name a refusal undici reports as a closed socket. */
  tlsMemo?: TlsFailureMemo;
}

/** A proxy that refused the tunnel or could not be reached. `code`: PROXY_<status> or PROXY_<errno>. */
export class ProxyFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ProxyFailure';
  }
}

const CREDENTIALS_HINT = 'check the user and password in the proxy URL (percent-encoded)';

export function proxyStatusFailure(shown: string, target: string, status: number): ProxyFailure {
  const hint = status === 407 || status === 401 ? CREDENTIALS_HINT : 'check that the proxy allows CONNECT to this host and port';
  return new ProxyFailure(`PROXY_${status}`, `the proxy ${shown} refused to tunnel to ${target} (HTTP ${status}); ${hint}`);
}

/** The dispatcher for `origin` (every request names it) under `o`. */
export function createDispatcher(undici: Undici, origin: string, o: DispatcherOptions): Dispatcher {
  const common = {
    connections: o.connections,
    allowH2: o.allowH2,
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
  };
  const tls = Object.keys(o.tls).length > 0 ? o.tls : undefined;
  const memo = o.tlsMemo;
  // The pools to the API's origin (direct, or inside a tunnel), with their connector shown to the memo.
  const factory = (poolOrigin: string | URL, options: { connect?: unknown }) =>
    new undici.Pool(poolOrigin, { ...options, connect: (memo ? watched(undici, options.connect, o.allowH2, memo) : options.connect) as Pool.Options['connect'] });
  if (o.route.kind === 'direct') return factory(origin, { ...common, connect: tls });
  const shown = o.route.shown;
  const ProxyClient = proxyClientClass(undici, shown, o.timeoutMs);
  const proxied = {
    ...common,
    // The tunnel's far end: TLS to the API with its CA and client certificate, HTTP/2 offered by ALPN.
    requestTls: { ...tls, allowH2: o.allowH2 },
    clientFactory: (url: URL, opts: object) => new ProxyClient(url, opts),
    factory,
  };
  if (o.route.noProxy === null) return new undici.ProxyAgent({ ...proxied, uri: o.route.url });
  // From the environment: undici applies NO_PROXY per request; the rest is
  // decided already (the URL for this origin's scheme), so both slots get it.
  return new undici.EnvHttpProxyAgent({ ...proxied, connect: tls, httpProxy: o.route.url, httpsProxy: o.route.url, noProxy: o.route.noProxy });
}

type Connector = (opts: object, cb: (err: Error | null, socket: Socket | null) => void) => void;

/** The pool's connector (undici's own, or the proxy tunnel's), each new socket shown to `memo`. */
function watched(undici: Undici, connect: unknown, allowH2: boolean, memo: TlsFailureMemo): Connector {
  const inner = (typeof connect === 'function' ? connect : undici.buildConnector({ ...(connect as object), allowH2 })) as Connector;
  return (opts, cb) =>
    inner(opts, (err, socket) => {
      if (socket) memo.watch(socket);
      cb(err, socket);
    });
}

/**
 * undici's client to the proxy, whose CONNECT answers and connect errors
 * become ProxyFailures. A CONNECT unanswered for `timeoutMs` is given up
 * and its socket, silent that long, closed: undici gave the CONNECT no
 * limit of its own (and an abort alone leaves its socket open), so such
 * sockets stayed open 300 s after the request they were for had timed out.
 */
function proxyClientClass(undici: Undici, shown: string, timeoutMs: number) {
  return class ProxyClient extends undici.Pool {
    constructor(url: URL, opts: { connect?: unknown }) {
      const inner = (typeof opts.connect === 'function' ? opts.connect : undici.buildConnector((opts.connect ?? {}) as object)) as Connector;
      const connect: Connector = (o, cb) =>
        inner(o, (err, socket) => {
          socket?.setTimeout(timeoutMs, () => socket.destroy());
          cb(err, socket);
        });
      super(url, { ...opts, connect: connect as Pool.Options['connect'] });
    }

    // undici calls connect() without a callback: the promise form.
    override async connect(opts: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData> {
      let data: Dispatcher.ConnectData;
      try {
        // Given up; the socket's own timeout (above) closes what undici leaves open: on its own,
        // a closed socket has undici send the CONNECT again on a new one, without end.
        const timeout = AbortSignal.timeout(timeoutMs);
        const given = opts.signal;
        data = await super.connect({ ...opts, signal: given instanceof AbortSignal ? AbortSignal.any([given, timeout]) : (given ?? timeout) });
      } catch (err) {
        if ((err as Error).name === 'TimeoutError') {
          throw new ProxyFailure('PROXY_TIMEOUT', `the proxy ${shown} did not answer the CONNECT to ${opts.path} within api.timeout_ms (${timeoutMs} ms); check api.proxy or HTTPS_PROXY / HTTP_PROXY`);
        }
        const code = (err as { code?: string }).code ?? 'ERROR';
        throw new ProxyFailure(`PROXY_${code}`, `cannot reach the proxy ${shown} (${code}: ${(err as Error).message}); check api.proxy or HTTPS_PROXY / HTTP_PROXY`);
      }
      if (data.statusCode !== 200) {
        data.socket.destroy();
        throw proxyStatusFailure(shown, opts.path, data.statusCode);
      }
      // The tunnel carries requests now, under their own timeouts.
      (data.socket as Socket).setTimeout(0);
      return data;
    }
  } as unknown as new (url: URL, opts: object) => Dispatcher;
}
