// `spoolship emulator`: runs the local emulator (src/emulator) until SIGTERM
// or SIGINT. Its one stdout line (JSON) is the interface scripts and tests
// read to find the URL and tokens; anything else goes to stderr.
import path from 'node:path';
import { EXIT_OK, SpoolshipError, UsageError } from '../../errors.js';
import {
  DEFAULT_LISTEN,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_REPLICA_DELAY_MS,
  DEFAULT_RPS,
  parseLatency,
  parseListen,
} from '../../emulator/options.js';
import { DATASOURCE_NAME_RE } from '../../emulator/faults.js';
import { loadFaultsArg, startEmulator, type EmulatorOptions, type Fault } from '../../emulator/index.js';
import { parseCommandArgs, type CliIo, type Command } from '../command.js';

const usage = `Usage: spoolship emulator [options]

Runs a local emulator of the Events API and the cluster-management API.
Prints one JSON line to stdout when ready:
  {"url":...,"token":...,"admin_token":...,"org":...,"ca_file":null|path,"foreign_token":...}
Stops on SIGTERM or SIGINT (exit 0).

Options:
  --listen HOST:PORT        address to listen on (default ${DEFAULT_LISTEN}; port 0 picks a free one)
  --data DIR                store rows in DIR/<name>.ndjson (quarantine: DIR/<name>_quarantine.ndjson;
                            names ending in _quarantine or too long: see docs/emulator.md);
                            without it rows are only counted
  --token T                 events token (DATASOURCE:APPEND and CREATE); repeatable; generated when absent
  --append-token T          events token with DATASOURCE:APPEND only (an append to a Data Source that
                            does not exist is 403); repeatable
  --datasources a,b,...     Data Sources that exist; any other name is created by its first append, which
                            needs a --token token and fits in 5 creations per minute (beyond: 429 with
                            Retry-After); without it every name exists
  --admin-token T           org-admin token of the cluster API; generated when absent
  --foreign-token T         a valid token of another region (answered 404); generated when absent
  --org ORG                 organization id (default emulator_org)
  --rps N                   Events API requests per second per organization, sliding 1 s window (default ${DEFAULT_RPS})
  --max-body BYTES          largest decoded body accepted (default ${DEFAULT_MAX_BODY_BYTES}); larger: 413
  --replica-delay-ms N      how long a cluster change keeps operation_in_progress (default ${DEFAULT_REPLICA_DELAY_MS})
  --tls                     HTTP/2 and HTTP/1.1 over TLS with a self-signed certificate (needs openssl);
                            the certificate is written under --data or a temp dir; ca_file is its path
  --client-ca FILE          with --tls: require a client certificate signed by this CA (PEM): mutual TLS,
                            for api.client_cert_file / api.client_key_file
  --faults JSON|@FILE       faults to inject, a JSON array, e.g. '[{"kind":"status","status":503,"p":0.1}]'
  --no-validate             benchmark only: count every non-empty line as a row without parsing JSON
  --max-connections N       open connections allowed (default ${DEFAULT_MAX_CONNECTIONS}); beyond: HTTP/2 GOAWAY 7, HTTP/1.1 429
  --latency-ms N|MIN-MAX    delay every Events and cluster API answer by N ms, or uniformly MIN..MAX ms,
                            on top of any fault (a distant region)
  --upload-bytes-per-sec N  read request bodies at most this fast (a slow uplink)
  -h, --help                show this help

See docs/emulator.md for the faults grammar and the stats endpoint.
`;

const OPTIONS = {
  listen: { type: 'string' },
  data: { type: 'string' },
  token: { type: 'string', multiple: true },
  'append-token': { type: 'string', multiple: true },
  datasources: { type: 'string' },
  'admin-token': { type: 'string' },
  'foreign-token': { type: 'string' },
  org: { type: 'string' },
  rps: { type: 'string' },
  'max-body': { type: 'string' },
  'replica-delay-ms': { type: 'string' },
  tls: { type: 'boolean' },
  'client-ca': { type: 'string' },
  faults: { type: 'string' },
  'no-validate': { type: 'boolean' },
  'max-connections': { type: 'string' },
  'latency-ms': { type: 'string' },
  'upload-bytes-per-sec': { type: 'string' },
} as const;

export function parseEmulatorArgs(argv: string[], cwd: string): EmulatorOptions {
  const { values: v } = parseCommandArgs('emulator', argv, OPTIONS);
  const listen = v.listen ?? DEFAULT_LISTEN;
  try {
    parseListen(listen);
  } catch (err) {
    throw new UsageError(`--listen: ${(err as Error).message}`);
  }
  for (const [flag, value] of [['--token', v.token], ['--append-token', v['append-token']], ['--admin-token', [v['admin-token']]], ['--foreign-token', [v['foreign-token']]], ['--org', [v.org]]] as const) {
    if (value?.some((s) => s !== undefined && s.trim() === '')) throw new UsageError(`${flag} must not be empty; give a value or leave the flag out`);
  }
  return {
    listen,
    dataDir: v.data === undefined ? null : path.resolve(cwd, v.data),
    tokens: v.token ?? [],
    appendTokens: v['append-token'] ?? [],
    datasources: datasourcesFlag(v.datasources),
    adminToken: v['admin-token'],
    foreignToken: v['foreign-token'],
    org: v.org,
    rps: intFlag('--rps', v.rps, 1),
    maxBody: intFlag('--max-body', v['max-body'], 1),
    replicaDelayMs: intFlag('--replica-delay-ms', v['replica-delay-ms'], 0),
    tls: v.tls ?? false,
    clientCaFile: v['client-ca'] === undefined ? null : path.resolve(cwd, v['client-ca']),
    faults: v.faults === undefined ? [] : faultsFlag(v.faults),
    validateRows: !(v['no-validate'] ?? false),
    maxConnections: intFlag('--max-connections', v['max-connections'], 1),
    latencyMs: latencyFlag(v['latency-ms']),
    uploadBytesPerSec: intFlag('--upload-bytes-per-sec', v['upload-bytes-per-sec'], 1),
  };
}

/** "a,b,c"; an empty value means no Data Source exists yet. */
function datasourcesFlag(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const bad = names.find((n) => !DATASOURCE_NAME_RE.test(n));
  if (bad !== undefined) {
    throw new UsageError(`--datasources: ${JSON.stringify(bad)} is not a Data Source name (letters, digits and _, not starting with a digit, at most 255 characters)`);
  }
  return names;
}

function latencyFlag(value: string | undefined): EmulatorOptions['latencyMs'] {
  if (value === undefined) return undefined;
  try {
    const latency = parseLatency(value);
    if (typeof latency !== 'number' && latency.minMs > latency.maxMs) throw new UsageError(`--latency-ms: ${value} has MIN above MAX; give e.g. --latency-ms 100-400`);
    return latency;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--latency-ms: ${(err as Error).message}`);
  }
}

function intFlag(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${flag}: ${JSON.stringify(value)} is not an integer >= ${min}; give e.g. ${flag} ${Math.max(min, 100)}`);
  }
  return Number(value);
}

function faultsFlag(value: string): Fault[] {
  try {
    return loadFaultsArg(value);
  } catch (err) {
    if (err instanceof SpoolshipError) throw new UsageError(`--faults: ${err.message}`);
    throw err;
  }
}

/** Waits for the first SIGTERM or SIGINT; dispose() stops listening. */
function watchSignals(): { received: Promise<NodeJS.Signals>; dispose(): void } {
  let dispose = (): void => {};
  const received = new Promise<NodeJS.Signals>((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      dispose();
      resolve(signal);
    };
    dispose = () => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
  return { received, dispose };
}

const command: Command = {
  name: 'emulator',
  summary: 'run the local emulator of the Events and cluster APIs',
  usage,
  async run(argv: string[], io: CliIo): Promise<number> {
    const opts = parseEmulatorArgs(argv, io.cwd);
    // Listen for signals before announcing readiness, so a SIGTERM sent right
    // after the JSON line is read still closes cleanly.
    const signals = watchSignals();
    let emu;
    try {
      emu = await startEmulator(opts);
    } catch (err) {
      signals.dispose();
      throw err;
    }
    io.stdout.write(
      `${JSON.stringify({ url: emu.url, token: emu.token, admin_token: emu.adminToken, org: emu.org, ca_file: emu.caFile, foreign_token: emu.foreignToken })}\n`,
    );
    io.stderr.write(`spoolship emulator: listening on ${emu.url}${opts.dataDir ? `, storing rows in ${opts.dataDir}` : ', counting rows only'}\n`);
    const got = await signals.received;
    await emu.close();
    io.stderr.write(`spoolship emulator: ${got}, closed\n`);
    return EXIT_OK;
  },
};
export default command;
