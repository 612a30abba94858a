// Typed client of the five cluster-management endpoints (docs/clusters.md).
// One job: send a request, return the parsed 2xx body, or throw a typed
// error. It never retries: a modifying request may have been applied, and the
// caller (the CLI's read-modify-write) is the one place that decides what to
// do next. Every non-2xx becomes an ApiError carrying the status, the
// server's body and a hint; no answer at all becomes a NetworkError.
import { Agent, buildConnector, EnvHttpProxyAgent, Pool, ProxyAgent, request, type Dispatcher } from 'undici';
import type { ProxyRoute } from '../config/proxy.js';
import { scrub } from '../config/redact.js';
import { ApiError, NetworkError } from '../errors.js';
import { readBounded } from '../sender/http-client.js';
import { createDispatcher, ProxyFailure, type TlsMaterial } from '../net/dispatcher.js';
import { clusterPaths, orgPaths } from './paths.js';
import type {
  ClusterConfiguration,
  ClusterListing,
  ReplicaAddBody,
  ReplicaAddResponse,
  ReplicaDeleteBody,
  ReplicaDeleteResponse,
  WeightsUpdateBody,
  WeightsUpdateResponse,
} from './types.js';

/** The most of an answer read: a listing of many clusters is far smaller; an endless body stops here. */
const MAX_ANSWER_BYTES = 4 * 2 ** 20;

export interface ClusterClientOptions {
  /** e.g. `https://api.example.com`; a path prefix is kept. */
  baseUrl: string;
  org: string;
  /** Org-admin token. */
  token: string;
  /** Whole request (connect, headers, body). Default 30 s. */
  timeoutMs?: number;
  /** Inject a dispatcher (tests); otherwise the client owns one (through `route`'s proxy, if any) and closes it. */
  dispatcher?: Dispatcher;
  /** The forward proxy to baseUrl (api.proxy and the environment, src/config/proxy.ts); default: none. */
  route?: ProxyRoute;
  /** api.ca_file and the client certificate, as the agent uses them; default: none. */
  tls?: TlsMaterial;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export class ClusterClient {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private closing: Promise<void> | null = null;

  constructor(private readonly opts: ClusterClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.ownsDispatcher = opts.dispatcher === undefined;
    this.dispatcher = opts.dispatcher ?? ownDispatcher(opts.baseUrl, opts.route, this.timeoutMs, opts.tls ?? {});
  }

  listClusters(): Promise<ClusterListing> {
    return this.call('GET', orgPaths(this.opts.org).clusters, undefined, true, isListing);
  }

  /**
   * `tokenInQuery`: send the token as `?token=` (the only endpoint that accepts
   * it) instead of the Authorization header. Off by default: URLs end up in
   * proxy and server logs, headers usually do not.
   */
  getConfiguration(options: { tokenInQuery?: boolean } = {}): Promise<ClusterConfiguration> {
    const path = orgPaths(this.opts.org).configuration;
    if (!options.tokenInQuery) return this.call('GET', path, undefined, true, isConfiguration);
    return this.call('GET', `${path}?token=${encodeURIComponent(this.opts.token)}`, undefined, false, isConfiguration);
  }

  updateWeights(clusterId: string, body: WeightsUpdateBody): Promise<WeightsUpdateResponse> {
    return this.call('PUT', clusterPaths(this.opts.org, clusterId).weights, body, true, isModification);
  }

  addReplica(clusterId: string, body: ReplicaAddBody): Promise<ReplicaAddResponse> {
    return this.call('POST', clusterPaths(this.opts.org, clusterId).replicas, body, true, isModification);
  }

  removeReplica(clusterId: string, replica: string, body: ReplicaDeleteBody): Promise<ReplicaDeleteResponse> {
    return this.call('DELETE', clusterPaths(this.opts.org, clusterId).replica(replica), body, true, isModification);
  }

  /** Closes the connection pool it owns (an injected dispatcher is the caller's). Idempotent. */
  async close(): Promise<void> {
    if (!this.ownsDispatcher) return;
    this.closing ??= this.dispatcher.close();
    await this.closing;
  }

  /** `looksRight`: a cheap shape check, so a proxy's or another API's 200 fails here, not deep in rendering. */
  private async call<T>(method: string, path: string, body?: unknown, bearer = true, looksRight: (v: unknown) => boolean = isObject): Promise<T> {
    const url = this.base + path;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (bearer) headers['authorization'] = `Bearer ${this.opts.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let status: number;
    let text: string;
    // One deadline for connect, headers and body: a server that trickles a
    // body must not hold the operator's terminal forever.
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.dispatcher,
        signal,
      });
      status = res.statusCode;
      const read = await readBounded(res.body, MAX_ANSWER_BYTES);
      // A server (an echo service behind a wrong --base-url) may send the admin token back: never printed.
      text = this.opts.token ? scrub(read.text, [this.opts.token]) : read.text;
      if (read.truncated) throw new ApiError(status, text.slice(0, 200), `the answer is larger than ${MAX_ANSWER_BYTES / 2 ** 20} MiB, which no cluster API answer is; check that --base-url (or api.base_url) is the API host`);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new NetworkError(describeNetworkFailure(method, redact(url), err, signal.aborted ? this.timeoutMs : null), err);
    }
    if (status < 200 || status > 299) throw new ApiError(status, text, hintFor(status));
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError(status, text, 'the answer is not JSON; check that --base-url (or api.base_url) is the API host');
    }
    if (!looksRight(parsed)) {
      const modifying = looksRight === isModification;
      throw new ApiError(
        status,
        text,
        modifying
          ? "the answer is not shaped like the cluster API's answer to this request; the change may have been made: check with 'spoolship clusters list', and that --base-url (or api.base_url) is the API host"
          : 'the answer is not shaped like the cluster API; check that --base-url (or api.base_url) is the API host',
      );
    }
    return parsed as T;
  }
}

function ownDispatcher(baseUrl: string, route: ProxyRoute | undefined, timeoutMs: number, tls: TlsMaterial): Dispatcher {
  if (!route || route.kind === 'direct') return new Agent({ keepAliveTimeout: 1_000, connect: tls });
  return createDispatcher({ Pool, ProxyAgent, EnvHttpProxyAgent, buildConnector }, new URL(baseUrl).origin, { route, tls, connections: null, allowH2: false, timeoutMs });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The answer to a PUT, POST or DELETE: the cluster and the operation requested (docs/clusters.md). */
function isModification(v: unknown): boolean {
  return isObject(v) && typeof v.cluster_id === 'string' && typeof v.operation === 'string';
}

/** role -> (replica -> integer weight), docs/clusters.md: a weight sent as "0" would be summed as text later. */
export function isWeights(v: unknown): boolean {
  return isObject(v) && Object.values(v).every((m) => isObject(m) && Object.values(m).every((w) => Number.isInteger(w) && (w as number) >= 0));
}

function isListing(v: unknown): boolean {
  return isObject(v) && Array.isArray(v.clusters) && v.clusters.every((c) => isObject(c) && isObject(c.replicas) && isWeights(c.cluster_weights));
}

function isConfiguration(v: unknown): boolean {
  if (!isObject(v)) return false;
  const w = v.cluster_weights;
  return isObject(v.cloud_regions) && isObject(v.available_sizes) && Array.isArray(v.available_roles) && (w === undefined || (isObject(w) && Object.values(w).every(isWeights)));
}

function redact(url: string): string {
  return url.replace(/([?&]token=)[^&]*/, '$1***');
}

function describeNetworkFailure(method: string, url: string, err: unknown, timedOutMs: number | null): string {
  if (timedOutMs !== null) {
    return `${method} ${url}: no answer within ${timedOutMs} ms; check --base-url and the network, or raise --timeout-ms`;
  }
  // The proxy refused or could not be reached: its own words, with its password as ***.
  if (err instanceof ProxyFailure) return `${method} ${url}: no answer (${err.code}): ${err.message}`;
  const code = (err as { code?: string }).code;
  return `${method} ${url}: no answer (${code ?? (err as Error).name}); check --base-url (or api.base_url) and the network`;
}

/** What the operator should do next, by status. */
export function hintFor(status: number): string {
  if (status === 400) return 'the server refused the request as invalid; fix what it names and run again';
  if (status === 401 || status === 403) {
    return 'the token was rejected: give an org-admin token with --token, SPOOLSHIP_ADMIN_TOKEN or clusters.token';
  }
  if (status === 404) return 'organization or cluster not found: check --org (or clusters.org), --cluster, and that --base-url is the region of the organization';
  if (status === 409) return "the cluster changed since it was read or is busy: run 'spoolship clusters list' and plan again";
  if (status === 429) return 'rate limited: wait a moment and run again';
  if (status >= 500) return 'the service failed: run again later; contact support if it persists';
  return 'unexpected answer from the cluster API';
}
