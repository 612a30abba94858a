// Per request: turn the Node request into an EmuRequest, route it, and carry
// out the answer, including the connection-level faults only this layer can
// perform (drop the connection, GOAWAY, hang). Bodies are read at the upload
// pace, and every Events and cluster API answer waits out the latency first.
import { sha1 } from '../events/events-api.js';
import { constants as h2constants, type Http2ServerRequest } from 'node:http2';
import type { IncomingMessage } from 'node:http';
import type { ClusterApi } from '../clusters/index.js';
import { EmulatorClosedError } from '../delays.js';
import type { EventsApi } from '../events/events-api.js';
import { jsonError, type EventsOutcome, type EventsResult } from '../events/outcome.js';
import type { StatsCollector } from '../stats.js';
import type { EmuRequest, EmuResponse, EventsRequestRecord } from '../types.js';
import { readBody, type UploadPace } from './body.js';
import type { ConnectionTracker } from './connections.js';
import { sendResponse, type AnyResponse } from './respond.js';

type AnyRequest = IncomingMessage | Http2ServerRequest;

const EMPTY = Buffer.alloc(0);

/** Cluster API bodies are small JSON documents. */
const CLUSTER_BODY_LIMIT_BYTES = 1024 * 1024;

export interface DispatchDeps {
  connections: ConnectionTracker;
  maxBodyBytes: number;
  events: EventsApi;
  clusters: ClusterApi;
  stats: StatsCollector;
  now: () => number;
  record(record: EventsRequestRecord): void;
  /**
   * An Events request's body was read; it is being handled (onEventsArrival).
   * Call the returned function once it is recorded, or dropped by close().
   */
  arrived(at: number): () => void;
  /** Body read pacing (`uploadBytesPerSec`), or null. */
  pace: UploadPace | null;
  /** Waits out one answer's latency (rejects with EmulatorClosedError on close), or null for none. */
  answerDelay: (() => Promise<void>) | null;
  /** Hash bodies for the records (when requests are recorded). */
  hashBodies: boolean;
}

export function createDispatcher(deps: DispatchDeps): (req: AnyRequest, res: AnyResponse) => Promise<void> {
  return async (req, res) => {
    req.on('error', () => {}); // client aborts surface in readBody; keep them from crashing the process
    const url = new URL(req.url ?? '/', 'http://emulator.invalid');
    const http2 = req.httpVersionMajor === 2;
    if (!http2 && deps.connections.isOverLimit(req.socket as never)) {
      req.resume();
      if (url.pathname === '/v0/events') deps.stats.countRequest(429);
      if (!(await waitLatency(deps))) return;
      // The rate-limit headers too, as on every 429 (docs/emulator.md, `--max-connections`): the limit is the connections'.
      const headers = { 'x-ratelimit-limit': String(deps.connections.limit), 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1', 'retry-after': '1' };
      sendResponse(res, { status: 429, headers, body: { error: 'too many connections from this address (limit reached); reuse connections' } });
      return;
    }
    if (url.pathname === '/v0/events') return handleEvents(deps, req, res, url, http2);
    if (url.pathname.startsWith('/v0/organizations/')) return handleClusters(deps, req, res, url);
    req.resume();
    if (url.pathname === '/_emulator/stats' && req.method === 'GET') {
      sendResponse(res, { status: 200, body: deps.stats.snapshot() });
      return;
    }
    sendResponse(res, { status: 404, body: { error: `no route for ${req.method} ${url.pathname}` } });
  };
}

async function handleEvents(deps: DispatchDeps, req: AnyRequest, res: AnyResponse, url: URL, http2: boolean): Promise<void> {
  const atMs = deps.now();
  const head = toEmuRequest(req, url, EMPTY);
  head.httpVersion = http2 ? '2' : '1.1';
  // Answered before the body: Node discards what the client still sends.
  let result = deps.events.admit(head);
  let wireBytes = 0;
  let bodySha1: string | null = null;
  let recorded = (): void => {};
  let outcome: EventsOutcome;
  try {
    if (result === null) {
      let read;
      try {
        read = await readBody(req, wireLimit(req.headers['content-encoding'], deps.maxBodyBytes), (n) => deps.stats.addBytesIn(n), deps.pace);
      } catch {
        return; // the client went away mid-body: nothing to answer
      }
      wireBytes = read.wireBytes;
      if (deps.hashBodies) bodySha1 = sha1(read.body);
      // From here on the request is answered and recorded whatever the client does.
      recorded = deps.arrived(atMs);
      result = await runEvents(deps, { ...head, body: read.body, bodyOverflow: read.overflow });
      if (result === null) return;
    }
    outcome = result.outcome;
    const label = outcome.kind === 'respond' ? outcome.response.status : outcome.kind;
    deps.stats.countRequest(label);
    deps.record({
      at: atMs,
      name: url.searchParams.get('name'),
      wait: url.searchParams.get('wait'),
      authorization: req.headers.authorization,
      contentEncoding: req.headers['content-encoding'],
      bodyBytes: wireBytes,
      decodedBytes: result.decodedBytes,
      bodySha1,
      decodedSha1: result.decodedSha1 ?? null,
      outcome: label,
      httpVersion: head.httpVersion,
    });
  } finally {
    recorded();
  }
  if (outcome.kind !== 'hang' && !(await waitLatency(deps))) return;
  carryOut(deps, req, res, outcome);
}

/** false when close() cancelled the wait: the connection is being dropped. */
async function waitLatency(deps: DispatchDeps): Promise<boolean> {
  if (deps.answerDelay === null) return true;
  try {
    await deps.answerDelay();
    return true;
  } catch (err) {
    if (err instanceof EmulatorClosedError) return false;
    throw err;
  }
}

/** null when close() interrupted the request (its connection is being dropped). */
async function runEvents(deps: DispatchDeps, emuReq: EmuRequest): Promise<EventsResult | null> {
  try {
    return await deps.events.handle(emuReq);
  } catch (err) {
    if (err instanceof EmulatorClosedError) return null;
    return { outcome: jsonError(500, `emulator error: ${(err as Error).message}`), name: null, decodedBytes: null };
  }
}

function carryOut(deps: DispatchDeps, req: AnyRequest, res: AnyResponse, outcome: EventsOutcome): void {
  switch (outcome.kind) {
    case 'respond':
      sendResponse(res, outcome.response);
      return;
    case 'hang':
      return; // close() destroys the connection
    case 'goaway':
      if (isHttp2(req)) {
        // Sends GOAWAY with REFUSED_STREAM (0x07) and closes the session; the
        // stream stays unanswered, so the client cannot know the rows went in.
        req.stream.session?.destroy(new Error('goaway fault'), h2constants.NGHTTP2_REFUSED_STREAM);
        return;
      }
      dropConnection(deps, req); // HTTP/1.1 has no GOAWAY: behave like reset_after_insert
      return;
    case 'reset':
      dropConnection(deps, req);
      return;
  }
}

function dropConnection(deps: DispatchDeps, req: AnyRequest): void {
  const socket = isHttp2(req) ? deps.connections.realSocket(req.stream.session?.socket as never) : (req.socket as never);
  if (socket) socket.destroy();
  else if (isHttp2(req)) req.stream.session?.destroy();
}

async function handleClusters(deps: DispatchDeps, req: AnyRequest, res: AnyResponse, url: URL): Promise<void> {
  const response = await clusterResponse(deps, req, url);
  if (response !== null && (await waitLatency(deps))) sendResponse(res, response);
}

/** null when the client went away mid-body. */
async function clusterResponse(deps: DispatchDeps, req: AnyRequest, url: URL): Promise<EmuResponse | null> {
  try {
    // Answered before the body: Node discards what the client still sends.
    const early = await deps.clusters.admit(toEmuRequest(req, url, EMPTY));
    if (early !== null) return early;
    let read;
    try {
      read = await readBody(req, CLUSTER_BODY_LIMIT_BYTES, undefined, deps.pace);
    } catch {
      return null;
    }
    if (read.overflow) return { status: 413, body: { error: `request body over ${CLUSTER_BODY_LIMIT_BYTES} bytes` } };
    const response = await deps.clusters.handle(toEmuRequest(req, url, read.body));
    return response ?? { status: 404, body: { error: `no route for ${req.method} ${url.pathname}` } };
  } catch (err) {
    return { status: 500, body: { error: `emulator error: ${(err as Error).message}` } };
  }
}

function toEmuRequest(req: AnyRequest, url: URL, body: Buffer): EmuRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(':')) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers, body };
}

function isHttp2(req: AnyRequest): req is Http2ServerRequest {
  return req.httpVersionMajor === 2;
}

/**
 * The most body bytes buffered from the wire. --max-body limits the decoded
 * body: an encoded body may be larger on the wire than decoded (gzip level 0,
 * empty members), so it may take twice the limit plus 64 KiB before it is
 * refused unread; the decoder then judges the decoded size (decode.ts).
 */
function wireLimit(contentEncoding: string | string[] | undefined, maxBodyBytes: number): number {
  const enc = (Array.isArray(contentEncoding) ? contentEncoding.join(',') : (contentEncoding ?? '')).trim().toLowerCase();
  return enc === '' || enc === 'identity' ? maxBodyBytes : 2 * maxBodyBytes + 64 * 1024;
}
