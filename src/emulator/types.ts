// Seams of the emulator (docs/emulator.md). The HTTP layer (server.ts) turns
// HTTP/1.1 and HTTP/2 requests into EmuRequest values and hands them to the
// Events API and cluster API handlers, which answer with EmuResponse values.
import type { Clock } from '../util/clock.js';

/** Fault selectors: `p` (probability per request) or `every` (every Nth matching request), optional `datasource`. */
export interface FaultSelector {
  p?: number;
  every?: number;
  datasource?: string;
}

export type FaultKind =
  | { kind: 'status'; status: number; retry_after?: number; location?: string }
  | { kind: 'partial'; status: 500 | 422 }
  | { kind: 'reset' }
  | { kind: 'reset_after_insert' }
  | { kind: 'hang' }
  | { kind: 'slow'; delay_ms: number }
  | { kind: 'goaway' }
  | { kind: 'reject_marker'; marker: string };

/** One entry of `--faults` / `EmulatorOptions.faults`. */
export type Fault = FaultKind & FaultSelector;

export interface EmuRequest {
  method: string;
  /** Path without the query string, e.g. `/v0/events`. */
  path: string;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string | undefined>;
  body: Buffer;
  /**
   * Set by the HTTP layer when the raw body passed the size limit: it stopped
   * buffering (so `body` is empty) and the handler answers 413 at its turn.
   */
  bodyOverflow?: boolean;
  /** Protocol of the connection; faults that act on the connection differ (GOAWAY). */
  httpVersion?: '1.1' | '2';
}

/** What is known of a request before its body is read. */
export type EmuRequestHead = Omit<EmuRequest, 'body' | 'bodyOverflow'>;

export interface EmuResponse {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON. */
  body?: string | Buffer | object;
}

export interface EmulatorStats {
  requests_by_status: Record<string, number>;
  rows: Record<string, number>;
  quarantined: Record<string, number>;
  bytes_in: number;
  /** When rows were last stored (emulator clock, ms since the epoch); null before any. */
  last_rows_at: number | null;
}

/** One Events API request as the emulator saw it (kept when `recordRequests` is on). */
export interface EventsRequestRecord {
  /** Emulator clock (ms) when the request arrived. */
  at: number;
  name: string | null;
  wait: string | null;
  authorization: string | undefined;
  contentEncoding: string | undefined;
  /** Bytes on the wire (as received). */
  bodyBytes: number;
  /** Decoded size, or null when the body could not be decoded. */
  decodedBytes: number | null;
  /**
   * SHA-1 (hex) of the body as received, and of it decoded (null when not
   * read or not decoded). Two requests with the same decoded body and other
   * wire bytes are a retry that was not byte-identical (README "Delivery guarantee").
   */
  bodySha1: string | null;
  decodedSha1: string | null;
  /** Final answer: an HTTP status, or 'reset' / 'hang' / 'goaway'. */
  outcome: number | 'reset' | 'hang' | 'goaway';
  httpVersion: '1.1' | '2';
}

/** Inclusive bounds of a uniformly drawn delay. */
export interface LatencyRange {
  minMs: number;
  maxMs: number;
}

export interface EmulatorOptions {
  /** "HOST:PORT"; default 127.0.0.1:7181; port 0 picks a free one. */
  listen?: string;
  /** Store rows under this dir; without it rows are only counted. */
  dataDir?: string | null;
  /** Event tokens (DATASOURCE:APPEND and CREATE). Generated when empty. */
  tokens?: string[];
  /** Event tokens with DATASOURCE:APPEND only: an append to a Data Source that does not exist is 403. */
  appendTokens?: string[];
  /**
   * Data Sources that exist. When given, any other name is created by its
   * first append (a CREATE token, 5 creations per minute per organization,
   * beyond it 429). When absent, every name exists.
   */
  datasources?: string[];
  adminToken?: string;
  /** A valid token of another region: answered 404. Generated when absent. */
  foreignToken?: string;
  org?: string;
  /** Events API requests per second per organization (sliding 1 s window). Default 100. */
  rps?: number;
  /** Largest decoded body accepted, in bytes. Default 10,000,000. */
  maxBody?: number;
  /** How long a cluster modification keeps operation_in_progress. Default 5000. */
  replicaDelayMs?: number;
  /** HTTP/2 and HTTP/1.1 over TLS with a self-signed certificate. */
  tls?: boolean;
  /**
   * With `tls`: require a client certificate signed by this CA (PEM file):
   * the TLS handshake of a client without one, or with another CA's, fails.
   */
  clientCaFile?: string | null;
  faults?: Fault[];
  /** Open connections allowed at once (the platform: 250 per IP); beyond it HTTP/2 gets GOAWAY 0x07, HTTP/1.1 a 429. */
  maxConnections?: number;
  /** Keep an EventsRequestRecord per Events API request (tests). */
  recordRequests?: boolean;
  /** Injected clock (ms since epoch) for the rate limit, dedup window and replica delays. */
  now?: () => number;
  /** Injected randomness for `p` faults (returns [0, 1)). */
  random?: () => number;
  /**
   * Parse each line as JSON to quarantine non-objects (default true). false is
   * for benchmarks only: every non-empty line counts as a row.
   */
  validateRows?: boolean;
  /** The openssl binary used to make the self-signed certificate (default "openssl"). */
  opensslPath?: string;
  /**
   * Every Events and cluster API answer is sent this much later (ms), on top
   * of any fault: a number, or a range drawn uniformly (one `random` draw per
   * answer). Default none. Models a distant region.
   */
  latencyMs?: number | LatencyRange;
  /** Request bodies are read at most this fast (bytes per second). Default unlimited. */
  uploadBytesPerSec?: number;
  /**
   * The clock that answer latency, `slow` faults and upload pacing wait on
   * (default: real time; tests pass a manual one and advance it).
   */
  timers?: Clock;
  /** Called once per Events API request when its outcome is known (a hang: when it starts hanging). */
  onEventsRequest?: (record: EventsRequestRecord) => void;
  /**
   * Called once per Events API request whose body was read, before it is
   * handled, with the `at` its record will carry (onEventsRequest): tests
   * pair the two to see which requests are in flight.
   */
  onEventsArrival?: (at: number) => void;
}
