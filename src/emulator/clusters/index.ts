// The emulator's cluster-management API (docs/clusters.md, "The emulator's
// cluster API"; docs/emulator.md, "Cluster API bodies"): one seeded organization with an aws and a gcp
// cluster, Bearer auth with the admin token (`?token=` on the configuration
// endpoint only), and the five endpoints. The HTTP server hands every request
// under /v0/organizations/ to `handle()`; null means "no such route" (404).
//
// Test seams: `onRequest` runs before a request is answered (to play another
// operator between a client's read and its write), `requests()` returns what
// was received, `setWeights` / `setFlags` change state directly.
import type { Cluster, Weights } from '../../clusters/types.js';
import type { EmuRequest, EmuRequestHead, EmuResponse } from '../types.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './body.js';
import { clusterCatalog } from './catalog.js';
import { deleteReplica, postReplica, putWeights } from './operations.js';
import { allowedMethods, matchClusterRoute, type ClusterRoute } from './routes.js';
import { ClusterStore, type ClusterFlags } from './store.js';

export type { ClusterFlags } from './store.js';

export interface ClusterApiOptions {
  org: string;
  adminToken: string;
  /** A valid token of another region: 404, as on the Events API. */
  foreignToken?: string;
  /** How long a modification keeps operation_in_progress, and an added replica `adding`. */
  replicaDelayMs: number;
  now: () => number;
}

/** One cluster API request as received, with the answer given. */
export interface ClusterRequestRecord {
  /** Emulator clock (ms). */
  at: number;
  method: string;
  path: string;
  /** Parsed JSON body, the raw text when it is not JSON, or null when empty. */
  body: unknown;
  status: number;
  response: unknown;
}

export type RequestHook = (req: EmuRequest) => void | Promise<void>;

export interface ClusterApi {
  /**
   * The token check, before the body is read: the 403 answer (recorded, body
   * null) for a cluster route with a token not valid for it, else null (read
   * the body and call handle()).
   */
  admit(req: EmuRequestHead): Promise<EmuResponse | null>;
  /** Answers a request under /v0/organizations/, or null when the path is not a cluster route. */
  handle(req: EmuRequest): Promise<EmuResponse | null>;
  /** Every cluster-route request received, oldest first. */
  requests(): ClusterRequestRecord[];
  /** Called before each cluster-route request is answered; null removes it. */
  onRequest(hook: RequestHook | null): void;
  /** The cluster as the listing would show it now. */
  getCluster(clusterId: string): Cluster | undefined;
  /** Replace a cluster's weights (another operator's change). */
  setWeights(clusterId: string, weights: Weights): void;
  /** Force flags (`undefined` fields keep deriving from the clock). */
  setFlags(clusterId: string, flags: ClusterFlags): void;
}

const MAX_RECORDS = 1000; // bounded: a long-running emulator must not grow without limit

export function createClusterApi(opts: ClusterApiOptions): ClusterApi {
  const store = new ClusterStore(opts.now, opts.replicaDelayMs);
  const catalog = clusterCatalog();
  const records: ClusterRequestRecord[] = [];
  let hook: RequestHook | null = null;

  async function admit(req: EmuRequestHead): Promise<EmuResponse | null> {
    const route = matchClusterRoute(req.path);
    // Unknown routes and methods keep their 404 / 405, which come before auth.
    if (!route || !allowedMethods(route).includes(req.method) || authorized(req, route, opts.adminToken)) return null;
    if (hook) await hook({ ...req, body: Buffer.alloc(0) });
    const res = refused(req, route, opts.foreignToken);
    records.push({ at: opts.now(), method: req.method, path: req.path, body: null, status: res.status, response: res.body ?? null });
    if (records.length > MAX_RECORDS) records.shift();
    return res;
  }

  async function handle(req: EmuRequest): Promise<EmuResponse | null> {
    const route = matchClusterRoute(req.path);
    if (!route) return null;
    if (hook) await hook(req);
    const body = parseBody(req.body);
    const res = answer(route, req, body);
    const recorded = body === undefined || body === TOO_DEEP ? req.body.toString('utf8') : body;
    records.push({ at: opts.now(), method: req.method, path: req.path, body: recorded, status: res.status, response: res.body ?? null });
    if (records.length > MAX_RECORDS) records.shift();
    return res;
  }

  function answer(route: ClusterRoute, req: EmuRequest, body: unknown): EmuResponse {
    const allowed = allowedMethods(route);
    if (!allowed.includes(req.method)) {
      return { status: 405, headers: { allow: allowed.join(', ') }, body: { error: `method ${req.method} not allowed; use ${allowed.join(' or ')}` } };
    }
    if (!authorized(req, route, opts.adminToken)) return refused(req, route, opts.foreignToken);
    if (route.org !== opts.org) return { status: 404, body: { error: `organization '${route.org}' not found` } };
    if (route.kind === 'list') return { status: 200, body: { clusters: store.list() } };
    if (route.kind === 'configuration') return { status: 200, body: catalog };
    if (!store.has(route.clusterId)) return { status: 404, body: { error: `cluster '${route.clusterId}' not found in organization '${route.org}'` } };
    if (body === undefined) return { status: 400, body: { error: 'request body is not valid JSON' } };
    if (body === TOO_DEEP) return { status: 400, body: { error: `request body nests deeper than ${MAX_JSON_DEPTH} levels` } };
    if (route.kind === 'weights') return putWeights(store, catalog, route.clusterId, body);
    if (req.method === 'POST') return postReplica(store, catalog, route.clusterId, body);
    return deleteReplica(store, catalog, route.clusterId, route.segment!, body);
  }

  return {
    admit,
    handle,
    requests: () => records.slice(),
    onRequest: (h) => {
      hook = h;
    },
    getCluster: (id) => store.get(id),
    setWeights: (id, w) => store.setWeights(id, w),
    setFlags: (id, f) => store.setFlags(id, f),
  };
}

function refused(req: EmuRequestHead, route: ClusterRoute, foreignToken: string | undefined): EmuResponse {
  const given = bearerToken(req) ?? queryToken(req, route);
  if (foreignToken !== undefined && given === foreignToken) {
    return { status: 404, body: { error: "the token's Workspace does not belong to this region; use the API host of the token's region" } };
  }
  return { status: 403, body: { error: 'token not valid for the cluster management API of this organization' } };
}

function authorized(req: EmuRequestHead, route: ClusterRoute, adminToken: string): boolean {
  if (req.headers['authorization'] !== undefined) return bearerToken(req) === adminToken;
  return queryToken(req, route) === adminToken;
}

/** The token of `Authorization: Bearer <token>` (the scheme's case does not matter, as on the Events API); null otherwise. */
function bearerToken(req: EmuRequestHead): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(req.headers['authorization'] ?? '')?.[1] ?? null;
}

/** `?token=`: the query form leaks into logs and proxies; the service allows it on the configuration endpoint only (elsewhere it is no token). */
function queryToken(req: EmuRequestHead, route: ClusterRoute): string | null {
  return route.kind === 'configuration' ? req.query.get('token') : null;
}

const TOO_DEEP = Symbol('too deep');

/** null for an empty body, undefined for a body that is not JSON, TOO_DEEP past MAX_JSON_DEPTH. */
function parseBody(buf: Buffer): unknown {
  if (buf.length === 0) return null;
  if (nestsDeeperThan(buf, MAX_JSON_DEPTH)) return TOO_DEEP;
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    return undefined;
  }
}
