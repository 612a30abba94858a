// The emulator as a library: `startEmulator(opts)` wires the Events API, the
// cluster API (src/emulator/clusters, another module's seam) and the HTTP
// layer, and returns a handle tests and the embedded agent drive.
//
// Shutdown sequence (close): cancel every delay (`slow` faults, answer
// latency, upload pacing; their requests are dropped) -> destroy every session
// and socket (hung requests too) -> wait for the listener to close -> flush and
// close the row files -> remove a temp certificate dir.
import { createClusterApi, type ClusterApi } from './clusters/index.js';
import { readFile } from 'node:fs/promises';
import { EmulatorOptionError } from './errors.js';
import { performance } from 'node:perf_hooks';
import { Delays, pickDelayMs } from './delays.js';
import { DataSourceCatalog } from './events/datasources.js';
import { createEventsApi } from './events/events-api.js';
import { PartialInsertMemory } from './events/partial-dedup.js';
import { createRowStore } from './events/row-store.js';
import { FaultPicker } from './fault-picker.js';
import { createDispatcher } from './http/dispatch.js';
import { EmulatorHttpServer } from './http/server.js';
import { resolveOptions } from './options.js';
import { SlidingWindowLimiter } from './rate-limiter.js';
import { StatsCollector } from './stats.js';
import { makeSelfSignedCert, type TlsMaterial } from './tls-cert.js';
import type { EmulatorOptions, EmulatorStats, EventsRequestRecord, Fault, FaultKind } from './types.js';

export type * from './types.js';
export { FaultSpecError, EmulatorOptionError, TlsUnavailableError, ListenError } from './errors.js';
export { loadFaultsArg, parseFaults } from './faults.js';

/** recordRequests keeps at most this many records (the oldest are dropped). */
export const MAX_RECORDED_REQUESTS = 100_000;
export { MAX_OPEN_ROW_FILES } from './events/row-store.js';
export { dataSourceFileName } from './events/file-names.js';

export interface Emulator {
  /** Base URL, e.g. http://127.0.0.1:41234 (https:// with TLS). */
  readonly url: string;
  /** The first events token. */
  readonly token: string;
  readonly tokens: readonly string[];
  /** Tokens with DATASOURCE:APPEND only (none unless given). */
  readonly appendTokens: readonly string[];
  readonly adminToken: string;
  /** A valid token of another region: the Events API answers 404. */
  readonly foreignToken: string;
  readonly org: string;
  /** The self-signed certificate to trust (PEM), or null without TLS. */
  readonly caFile: string | null;
  readonly clusters: ClusterApi;
  stats(): EmulatorStats;
  /** Events API requests seen (empty unless `recordRequests`). */
  requests(): EventsRequestRecord[];
  /**
   * Resolves once every Events request whose body had been read when it was
   * called is recorded (or dropped by close()). Rows are stored before their
   * request is recorded: a test that saw rows and then reads requests() or
   * stats() awaits this first.
   */
  settled(): Promise<void>;
  /** The next `n` Events API requests get `fault`, ahead of the configured faults. */
  failNext(n: number, fault: FaultKind): void;
  /** Replaces the configured faults; their `every` counters restart. */
  setFaults(faults: Fault[]): void;
  close(): Promise<void>;
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const o = resolveOptions(opts);
  const clientCa = o.clientCaFile === null ? null : await readClientCa(o.clientCaFile);
  const tls: TlsMaterial | null = o.tls ? await makeSelfSignedCert(o.dataDir, o.opensslPath) : null;
  const stats = new StatsCollector(o.now);
  const faults = new FaultPicker(o.faults, o.random);
  const delays = new Delays(opts.timers);
  const store = createRowStore(o.dataDir);
  const clusters = createClusterApi({ org: o.org, adminToken: o.adminToken, foreignToken: o.foreignToken, replicaDelayMs: o.replicaDelayMs, now: o.now });
  // Only tests look at the records: hashing every body costs the emulator ~2 ms per MB otherwise.
  const hashBodies = o.recordRequests || opts.onEventsRequest !== undefined;
  const events = createEventsApi({
    tokens: new Set(o.tokens),
    appendTokens: new Set(o.appendTokens),
    foreignToken: o.foreignToken,
    datasources: new DataSourceCatalog(o.datasources, o.now),
    limiter: new SlidingWindowLimiter(o.rps, o.now),
    faults,
    maxBodyBytes: o.maxBodyBytes,
    validateRows: o.validateRows,
    inserter: { store, dedup: new PartialInsertMemory(o.now), stats },
    delay: (ms) => delays.delay(ms),
    hashBodies,
  });
  const records: EventsRequestRecord[] = [];
  const record = (r: EventsRequestRecord): void => {
    if (o.recordRequests) {
      records.push(r);
      if (records.length > MAX_RECORDED_REQUESTS) records.shift();
    }
    opts.onEventsRequest?.(r);
  };
  // Requests between their body's arrival and their record (settled()).
  const handling = new Set<Promise<void>>();
  const arrived = (at: number): (() => void) => {
    opts.onEventsArrival?.(at);
    let done!: () => void;
    const p = new Promise<void>((resolve) => (done = resolve));
    handling.add(p);
    return () => {
      handling.delete(p);
      done();
    };
  };
  const latency = o.latency;
  const answerDelay = latency === null ? null : () => delays.delay(pickDelayMs(latency, o.random));
  const pace =
    o.uploadBytesPerSec === null
      ? null
      : { bytesPerSec: o.uploadBytesPerSec, delay: (ms: number) => delays.delay(ms), nowMs: () => (opts.timers ? opts.timers.now() : performance.now()) };
  const server = new EmulatorHttpServer({ tls, clientCa, maxConnections: o.maxConnections }, (connections) =>
    createDispatcher({ connections, maxBodyBytes: o.maxBodyBytes, events, clusters, stats, now: o.now, record, arrived, pace, answerDelay, hashBodies }),
  );
  let address;
  try {
    address = await server.listen(o.host, o.port);
  } catch (err) {
    await store.close();
    await tls?.cleanup();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return {
    url: `${tls ? 'https' : 'http'}://${urlHost(o.host)}:${address.port}`,
    token: o.tokens[0]!,
    tokens: o.tokens,
    appendTokens: o.appendTokens,
    adminToken: o.adminToken,
    foreignToken: o.foreignToken,
    org: o.org,
    caFile: tls?.certFile ?? null,
    clusters,
    stats: () => stats.snapshot(),
    requests: () => [...records],
    settled: async () => {
      await Promise.all([...handling]);
    },
    failNext: (n, fault) => faults.failNext(n, fault),
    setFaults: (list) => faults.setFaults(list),
    close: () =>
      (closing ??= (async () => {
        delays.close();
        await server.close();
        await store.close();
        await tls?.cleanup();
      })()),
  };
}

/** A wildcard listen address is reached through loopback; IPv6 needs brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** The --client-ca file, read once at start: a wrong path is an option error, not a handshake failure later. */
async function readClientCa(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new EmulatorOptionError(`--client-ca ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
