// EmulatorOptions with defaults applied and checked once at start-up.
import { randomBytes } from 'node:crypto';
import { EmulatorOptionError } from './errors.js';
import { DATASOURCE_NAME_RE, MAX_DATASOURCE_NAME_CHARS, parseFaults } from './faults.js';
import type { EmulatorOptions, Fault, LatencyRange } from './types.js';

export const DEFAULT_LISTEN = '127.0.0.1:7181';
export const DEFAULT_RPS = 100; // the platform's Events API limit per organization
export const DEFAULT_MAX_BODY_BYTES = 10 * 1000 * 1000; // 10 MB, decoded
export const DEFAULT_REPLICA_DELAY_MS = 5000;
export const DEFAULT_MAX_CONNECTIONS = 250; // the platform's limit per IP address
export const DEFAULT_ORG = 'emulator_org';

export interface ResolvedOptions {
  host: string;
  port: number;
  dataDir: string | null;
  tokens: string[];
  appendTokens: string[];
  /** null: every name exists. */
  datasources: string[] | null;
  adminToken: string;
  foreignToken: string;
  org: string;
  rps: number;
  maxBodyBytes: number;
  replicaDelayMs: number;
  tls: boolean;
  /** With tls: the CA (PEM) whose certificates clients must present; null: none asked. */
  clientCaFile: string | null;
  faults: Fault[];
  maxConnections: number;
  recordRequests: boolean;
  validateRows: boolean;
  opensslPath: string;
  /** null: answers are not delayed. */
  latency: LatencyRange | null;
  /** null: bodies are read as fast as they arrive. */
  uploadBytesPerSec: number | null;
  now: () => number;
  random: () => number;
}

export function resolveOptions(opts: EmulatorOptions): ResolvedOptions {
  const { host, port } = parseListen(opts.listen ?? DEFAULT_LISTEN);
  const tokens = opts.tokens && opts.tokens.length > 0 ? [...opts.tokens] : [generateToken('events')];
  return {
    host,
    port,
    dataDir: opts.dataDir ?? null,
    tokens,
    appendTokens: [...(opts.appendTokens ?? [])],
    datasources: opts.datasources === undefined ? null : opts.datasources.map(checkDataSourceName),
    adminToken: opts.adminToken ?? generateToken('admin'),
    foreignToken: opts.foreignToken ?? generateToken('foreign'),
    org: opts.org ?? DEFAULT_ORG,
    rps: positiveInt('rps', opts.rps ?? DEFAULT_RPS, 1),
    maxBodyBytes: positiveInt('maxBody', opts.maxBody ?? DEFAULT_MAX_BODY_BYTES, 1),
    replicaDelayMs: positiveInt('replicaDelayMs', opts.replicaDelayMs ?? DEFAULT_REPLICA_DELAY_MS, 0),
    tls: opts.tls ?? false,
    clientCaFile: clientCa(opts),
    faults: parseFaults(opts.faults ?? []),
    maxConnections: positiveInt('maxConnections', opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS, 1),
    recordRequests: opts.recordRequests ?? false,
    validateRows: opts.validateRows ?? true,
    opensslPath: opts.opensslPath ?? 'openssl',
    latency: resolveLatency(opts.latencyMs),
    uploadBytesPerSec: opts.uploadBytesPerSec === undefined ? null : positiveInt('uploadBytesPerSec', opts.uploadBytesPerSec, 1),
    now: opts.now ?? Date.now,
    random: opts.random ?? Math.random,
  };
}

/** "HOST:PORT", "[::1]:PORT"; port 0 picks a free port. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new EmulatorOptionError(`listen address ${JSON.stringify(listen)} is not HOST:PORT; use e.g. 127.0.0.1:7181 (port 0 picks a free one)`);
  }
  return { host: (m[1] ?? m[2])!, port };
}

/** `--latency-ms`: "N" or "MIN-MAX" (ms). */
export function parseLatency(value: string): number | LatencyRange {
  const m = /^(\d{1,9})(?:-(\d{1,9}))?$/.exec(value);
  if (!m) throw new EmulatorOptionError(`latency ${JSON.stringify(value)} is not N or MIN-MAX milliseconds; use e.g. 250 or 100-400`);
  return m[2] === undefined ? Number(m[1]) : { minMs: Number(m[1]), maxMs: Number(m[2]) };
}

function resolveLatency(latency: number | LatencyRange | undefined): LatencyRange | null {
  if (latency === undefined) return null;
  const range = typeof latency === 'number' ? { minMs: latency, maxMs: latency } : { ...latency };
  positiveInt('latencyMs', range.minMs, 0);
  positiveInt('latencyMs', range.maxMs, 0);
  if (range.minMs > range.maxMs) throw new EmulatorOptionError(`latencyMs range ${range.minMs}-${range.maxMs} has MIN above MAX`);
  return range.maxMs === 0 ? null : range;
}

function checkDataSourceName(name: string): string {
  if (!DATASOURCE_NAME_RE.test(name)) {
    throw new EmulatorOptionError(
      `datasources: ${JSON.stringify(name)} is not a Data Source name (letters, digits and _, not starting with a digit, at most ${MAX_DATASOURCE_NAME_CHARS} characters)`,
    );
  }
  return name;
}

function positiveInt(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) throw new EmulatorOptionError(`${name} must be an integer >= ${min}, got ${value}`);
  return value;
}

function generateToken(kind: string): string {
  return `emu_${kind}_${randomBytes(16).toString('hex')}`;
}

function clientCa(opts: EmulatorOptions): string | null {
  const file = opts.clientCaFile ?? null;
  if (file !== null && !opts.tls) throw new EmulatorOptionError('--client-ca needs --tls: client certificates are asked for in the TLS handshake');
  return file;
}
