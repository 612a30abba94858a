// Fixtures for the process-level suite: the built CLI (`node dist/cli.js run`)
// as a child process that tests kill, an emulator in the test process on
// port 0 whose every Events request is recorded with its arrival and answer
// times, fixed-size lines (so a batch's line count is known from its size),
// and polling helpers with deadlines. vitest's globalSetup builds dist/.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { stringify } from 'yaml';
import { startEmulator, type Emulator, type EmulatorOptions, type EventsRequestRecord } from '../../src/emulator/index.js';
import { answersByStatus, describeDelivery, impossible, quarantineSample } from '../support/delivery.js';
import { withLevelNumber } from '../support/log-levels.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'dist', 'cli.js');

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined);
});
export function onCleanup(fn: () => Promise<unknown>): void {
  cleanups.push(fn);
}

export async function tempDir(prefix = 'spoolship-proc-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  // SPOOLSHIP_TEST_KEEP=1 keeps the dirs (spool, state, emulator rows) to inspect a failure.
  if (process.env.SPOOLSHIP_TEST_KEEP) console.log(`[keep] ${dir}`);
  else onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// ---------------------------------------------------------------- emulator

/** An Events request as recorded, plus when (test clock) its outcome was known. */
export interface TimedRecord extends EventsRequestRecord {
  doneAt: number;
}

export interface TestEmu {
  emu: Emulator;
  dataDir: string;
  records: TimedRecord[];
  /** Events requests arrived and not yet answered (or recorded as hanging). */
  inFlight(): number;
}

export async function startEmu(dir: string, opts: EmulatorOptions = {}): Promise<TestEmu> {
  const dataDir = path.join(dir, 'emu');
  const records: TimedRecord[] = [];
  // Requests whose body was read and that are not recorded yet, by their `at`.
  const pending = new Map<number, number>();
  const emu = await startEmulator({
    listen: '127.0.0.1:0',
    dataDir,
    ...opts,
    onEventsArrival: (at) => pending.set(at, (pending.get(at) ?? 0) + 1),
    onEventsRequest: (r) => {
      const n = pending.get(r.at);
      if (n !== undefined) {
        if (n > 1) pending.set(r.at, n - 1);
        else pending.delete(r.at);
      }
      records.push({ ...r, doneAt: Date.now() });
    },
  });
  onCleanup(() => emu.close());
  const inFlight = () => {
    let n = 0;
    for (const c of pending.values()) n += c;
    return n;
  };
  return { emu, dataDir, records, inFlight };
}

// ------------------------------------------------------------------- lines

/** README "Delivery guarantee": acknowledgements reach the disk within this window (group commit). */
export const ACK_WINDOW_MS = 100;
/**
 * The emulator records an answer just before the agent reads it: an ack the
 * agent made at time a was recorded here a little earlier. This slack covers
 * that delivery latency, nothing else.
 */
export const ANSWER_LATENCY_SLACK_MS = 20;

/** Fixed-size NDJSON lines: `{"id":"<prefix><n, 9 digits>","pad":"xx..."}` + "\n", `LINE_BYTES` bytes in all. */
export const LINE_BYTES = 100;

export function line(prefix: string, n: number): string {
  const head = `{"id":"${prefix}${String(n).padStart(9, '0')}","pad":"`;
  return `${head}${'x'.repeat(LINE_BYTES - head.length - 3)}"}\n`;
}

export function lines(prefix: string, from: number, count: number): string {
  let s = '';
  for (let i = from; i < from + count; i++) s += line(prefix, i);
  return s;
}

export interface DeliveryCheck {
  rows: number;
  unique: number;
  duplicates: number;
  missing: number;
  /** Rows that are not one of the expected lines (a mangled or foreign line). */
  unexpected: number;
  firstMissing: string[];
  /** Ids of the first lines stored more than once. */
  firstDuplicates: string[];
  firstUnexpected: string[];
}

/**
 * Compare the rows the emulator stored for `ds` with the expected ids
 * `<prefix>0 .. <prefix>(count-1)`. Streams the file: it may be hundreds of MB.
 */
export async function checkDelivery(t: TestEmu, ds: string, prefix: string, count: number, lineBytes = LINE_BYTES): Promise<DeliveryCheck> {
  const seen = new Uint16Array(count);
  let rows = 0;
  let unexpected = 0;
  const firstUnexpected: string[] = [];
  const file = path.join(t.dataDir, `${ds}.ndjson`);
  const re = new RegExp(`^\\{"id":"${prefix}(\\d{9})","pad":"[A-Za-z0-9+/x]+"\\}$`);
  const take = (l: string): void => {
    rows++;
    const m = re.exec(l);
    const n = m ? Number(m[1]) : -1;
    if (!m || n >= count || l.length !== lineBytes - 1) {
      unexpected++;
      if (firstUnexpected.length < 3) firstUnexpected.push(l.slice(0, 120));
      return;
    }
    if (seen[n]! < 65535) seen[n]!++;
  };
  const size = existsSync(file) ? statSync(file).size : 0;
  if (size > 0) {
    // The emulator appends on the threadpool: a read may catch a write half
    // done. A last line without its newline is not a row yet.
    const last = Buffer.alloc(1);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, last, 0, 1, size - 1);
    } finally {
      closeSync(fd);
    }
    const { createReadStream } = await import('node:fs');
    const { createInterface } = await import('node:readline');
    const rl = createInterface({ input: createReadStream(file, { end: size - 1 }), crlfDelay: Infinity });
    let held: string | null = null;
    for await (const l of rl) {
      if (held !== null) take(held);
      held = l;
    }
    if (held !== null && last[0] === 0x0a) take(held);
  }
  let unique = 0;
  let duplicates = 0;
  const firstMissing: string[] = [];
  const firstDuplicates: string[] = [];
  for (let i = 0; i < count; i++) {
    if (seen[i]! > 0) {
      unique++;
      duplicates += seen[i]! - 1;
      if (seen[i]! > 1 && firstDuplicates.length < 5) firstDuplicates.push(`${prefix}${String(i).padStart(9, '0')}`);
    } else if (firstMissing.length < 5) firstMissing.push(`${prefix}${String(i).padStart(9, '0')}`);
  }
  return { rows, unique, duplicates, missing: count - unique, unexpected, firstMissing, firstDuplicates, firstUnexpected };
}

/**
 * Wait until every expected line `<prefix>0 .. <prefix>(count-1)` is stored
 * for `ds`, and return the last check. Fails at once, with what arrived, on
 * a row that is not an expected line (cut, joined, foreign), a line the
 * emulator quarantined, or, unless
 * `duplicates: 'allow'`, a line stored twice: no further delivery mends
 * those. On timeout it says which lines are missing and what the emulator
 * answered (test/support/delivery.ts).
 */
export async function waitForDelivery(
  t: TestEmu,
  ds: string,
  prefix: string,
  count: number,
  what: string,
  opts: { timeoutMs?: number; everyMs?: number; duplicates?: 'allow'; lineBytes?: number } = {},
): Promise<DeliveryCheck> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const answers = async (): Promise<string> => {
    // The rows read may be ahead of the records of their requests.
    await t.emu.settled();
    return answersByStatus(t.records, ds);
  };
  for (;;) {
    const c = await checkDelivery(t, ds, prefix, count, opts.lineBytes);
    const quarantined = t.emu.stats().quarantined[ds] ?? 0;
    const seen = {
      rows: c.rows,
      present: c.unique,
      missing: c.missing,
      duplicates: c.duplicates,
      unexpected: c.unexpected,
      sampleMissing: c.firstMissing.slice(0, 3),
      sampleDuplicates: c.firstDuplicates.slice(0, 3),
      sampleUnexpected: c.firstUnexpected,
      quarantined,
      sampleQuarantined: quarantined > 0 ? quarantineSample(t.dataDir, ds) : [],
    };
    const wrong = impossible(seen, opts.duplicates === 'allow');
    if (wrong) throw new Error(`${what}: ${wrong}\n  ${describeDelivery(seen, await answers())}`);
    if (c.missing === 0) return c;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n  ${describeDelivery(seen, await answers())}`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 100));
  }
}

/** Ids of the rows stored for `ds`, in the order they were stored (-1: not an expected line). */
export async function rowIds(t: TestEmu, ds: string, prefix: string): Promise<Int32Array> {
  const file = path.join(t.dataDir, `${ds}.ndjson`);
  if (!existsSync(file)) return new Int32Array(0);
  const text = await readFile(file, 'latin1');
  const out = new Int32Array(Math.floor(text.length / LINE_BYTES) + 16);
  let n = 0;
  let pos = 0;
  const head = `{"id":"${prefix}`;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    const end = nl === -1 ? text.length : nl;
    if (n >= out.length) break;
    out[n++] = text.startsWith(head, pos) && end - pos === LINE_BYTES - 1 ? Number(text.slice(pos + head.length, pos + head.length + 9)) : -1;
    pos = end + 1;
  }
  return out.subarray(0, n);
}

// ------------------------------------------------------------------ config

type Tree = Record<string, unknown>;
function merge(a: Tree, b: Tree): Tree {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' ? merge(a[k] as Tree, v as Tree) : v;
  }
  return out;
}

export interface AgentPaths {
  dir: string;
  spoolDir: string;
  stateDir: string;
  configFile: string;
}

/** Write `<dir>/spoolship.yaml` for `spoolship run` against the emulator. */
export async function writeConfig(dir: string, t: TestEmu, overrides: Tree = {}): Promise<AgentPaths> {
  const spoolDir = path.join(dir, 'spool');
  const stateDir = path.join(dir, 'state');
  const base: Tree = {
    api: { base_url: t.emu.url, token: t.emu.token, timeout_ms: 10_000 },
    spool: { dir: spoolDir, idle_ms: 1000 },
    state_dir: stateDir,
    batch: { linger_ms: 100 },
    retry: { initial_ms: 20, max_ms: 200 },
    admin: { listen: '127.0.0.1:0' },
    log: { level: 'info', format: 'json' },
  };
  const tree = merge(base, overrides);
  const configFile = path.join(dir, 'spoolship.yaml');
  await writeFile(configFile, stringify(tree));
  return { dir, spoolDir, stateDir: tree.state_dir as string, configFile };
}

// ------------------------------------------------------------------- agent

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface AgentProcess {
  child: ChildProcess;
  pid: number;
  logs: LogLine[];
  /** stderr lines that are not JSON (a crash trace). */
  rawErr: string[];
  /** Everything the process wrote to stdout. */
  stdout: string;
  /** Everything it wrote to stderr, as written. */
  stderr: string;
  /** Resolves with the admin URL (or null when admin is off) once "spoolship started" is logged; rejects if the process exits first. */
  started: Promise<string | null>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  exitInfo: { code: number | null; signal: NodeJS.Signals | null; at: number } | null;
}

/** A uid/gid with no account here: `spawnAgent(..., { uid })` runs the agent as it (setpriv), where root's bypass of file modes would hide what a test looks for. */
export const OTHER_UID = 10001;

/** `argv` run as `uid` (and its gid, no groups) through setpriv; as it is when `uid` is undefined. */
export function asUid(argv: string[], uid: number | undefined): string[] {
  return uid === undefined ? argv : ['setpriv', '--reuid', String(uid), '--regid', String(uid), '--clear-groups', '--', ...argv];
}

export function spawnAgent(configFile: string, env: Record<string, string> = {}, opts: { uid?: number } = {}): AgentProcess {
  const argv = asUid([process.execPath, CLI, 'run', '-c', configFile], opts.uid);
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: path.dirname(configFile),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const rawErr: string[] = [];
  let resolveStarted!: (url: string | null) => void;
  let rejectStarted!: (err: Error) => void;
  const started = new Promise<string | null>((res, rej) => {
    resolveStarted = res;
    rejectStarted = rej;
  });
  started.catch(() => undefined);
  let buf = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    proc.stdout += chunk;
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    proc.stderr += chunk;
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const text = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const rec = withLevelNumber(JSON.parse(text) as LogLine);
        logs.push(rec);
        if (rec.event === 'started') resolveStarted((rec.admin as string | null) ?? null);
      } catch {
        rawErr.push(text);
      }
    }
  });
  const proc: AgentProcess = {
    child,
    pid: child.pid!,
    logs,
    rawErr,
    stdout: '',
    stderr: '',
    started,
    exitInfo: null,
    exited: new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        proc.exitInfo = { code, signal, at: Date.now() };
        rejectStarted(new Error(`agent exited (code ${code}, signal ${signal}) before "spoolship started"; stderr: ${rawErr.join('\n').slice(-2000)} ${JSON.stringify(logs.slice(-5))}`));
        resolve(proc.exitInfo);
      });
    }),
  };
  onCleanup(async () => {
    if (proc.exitInfo === null) {
      child.kill('SIGKILL');
      await proc.exited;
    }
  });
  return proc;
}

/** SIGKILL now; returns the test-clock time of the kill. */
export async function kill9(p: AgentProcess): Promise<number> {
  const at = Date.now();
  p.child.kill('SIGKILL');
  const info = await p.exited;
  if (info.signal !== 'SIGKILL') throw new Error(`expected death by SIGKILL, got code ${info.code} signal ${info.signal}`);
  return at;
}

/** Log lines at ERROR (50) or above. */
export function errorsIn(p: AgentProcess): LogLine[] {
  return p.logs.filter((l) => l.level >= 50);
}

// -------------------------------------------------------------- admin/http

export async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* metrics text */
  }
  return { status: res.status, body };
}

export async function metric(adminUrl: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  let sum = 0;
  let found = false;
  for (const l of text.split('\n')) {
    if (!l.startsWith(name)) continue;
    const rest = l.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels && !rest.includes(labels)) continue;
    const v = Number(l.slice(l.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) {
      sum += v;
      found = true;
    }
  }
  return found ? sum : NaN;
}

// ------------------------------------------------------------------ timing

/** Poll an observable condition until it holds, or fail naming it. */
export async function waitFor<T>(fn: () => T | Promise<T>, what: string, timeoutMs = 30_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${String(lastErr)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** mulberry32: a small seeded PRNG, so a failing run can be replayed from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

