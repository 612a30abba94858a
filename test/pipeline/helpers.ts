// Fixtures for pipeline tests: a real emulator on port 0 storing rows in a
// temp dir, a real agent in-process with a config built by the real config
// module, and helpers to write spool files and read what arrived.
import { existsSync, readFileSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Clock } from '../../src/util/clock.js';
import { afterEach, expect } from 'vitest';
import { Agent, type AgentDeps } from '../../src/agent/agent.js';
import { resolveConfig } from '../../src/config/index.js';
import type { Config } from '../../src/config/types.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import type { BodyDrops } from '../../src/util/scavenge.js';
import type { Codec } from '../../src/codec/index.js';
import { answersByStatus, compareRows, describeDelivery, impossible, quarantineSample } from '../support/delivery.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined);
});
export function onCleanup(fn: () => Promise<unknown>): void {
  cleanups.push(fn);
}

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-pipe-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export async function startEmu(dir: string, opts: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), recordRequests: true, ...opts });
  onCleanup(() => emu.close());
  return emu;
}

type Tree = Record<string, unknown>;
function merge(a: Tree, b: Tree): Tree {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' ? merge(a[k] as Tree, v as Tree) : v;
  }
  return out;
}

export function configFor(dir: string, emu: Emulator, overrides: Tree = {}): Readonly<Config> {
  const base: Tree = {
    api: { base_url: emu.url, token: emu.token, timeout_ms: 5000 },
    spool: { dir: path.join(dir, 'spool'), idle_ms: 200 },
    state_dir: path.join(dir, 'state'),
    batch: { linger_ms: 50 },
    retry: { initial_ms: 5, max_ms: 50 },
    admin: { listen: '' },
    log: { level: 'silent', format: 'json' },
  };
  return resolveConfig(merge(base, overrides), { env: {}, cwd: dir, baseDir: dir }).config;
}

export interface Running {
  agent: Agent;
  stop(): Promise<void>;
}

/** `logs`: the agent's log lines (info and above) are pushed there, parsed; silent without it. */
export async function startAgent(
  config: Readonly<Config>,
  opts: { rescanMs?: number; clock?: Clock; heapGrowth?: AgentDeps['heapGrowth']; bodyDrops?: BodyDrops; scanSlice?: number; bodiesInMemoryBytes?: number; codec?: Codec; logs?: Array<Record<string, unknown>> } = {},
): Promise<Running> {
  let fatal: unknown = null;
  const logs = opts.logs;
  const agent = await Agent.start(config, {
    log: logs ? pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) }) : pino({ level: 'silent' }),
    clock: opts.clock,
    rescanMs: opts.rescanMs ?? 50,
    heapGrowth: opts.heapGrowth,
    bodyDrops: opts.bodyDrops,
    scanSlice: opts.scanSlice,
    bodiesInMemoryBytes: opts.bodiesInMemoryBytes,
    codec: opts.codec,
    onFatal: (err) => {
      fatal = err;
    },
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await agent.close();
    if (fatal) throw fatal;
  };
  onCleanup(stop);
  return { agent, stop };
}

export async function writeLines(file: string, lines: string[]): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await appendFile(file, lines.length ? `${lines.join('\n')}\n` : '');
}

export function jsonLines(prefix: string, from: number, count: number, pad = 0): string[] {
  const out: string[] = [];
  for (let i = from; i < from + count; i++) out.push(JSON.stringify({ id: `${prefix}-${i}`, n: i, pad: 'x'.repeat(pad) }));
  return out;
}

/** Rows stored by the emulator for a Data Source, as text lines. */
export function rows(emu: Emulator, dir: string, ds: string): string[] {
  const f = path.join(dir, 'emu', `${ds}.ndjson`);
  if (!existsSync(f)) return [];
  const text = readFileSync(f, 'utf8');
  // The emulator appends on the threadpool: a read may catch a write half
  // done. What follows the last newline is not a row yet.
  const end = text.lastIndexOf('\n');
  return end === -1 ? [] : text.slice(0, end).split('\n');
}

/**
 * Wait until the rows stored for `ds` hold every line of `expected`, and
 * return them. Fails at once, with what arrived, on a row that is not one of
 * the lines written, a line the emulator quarantined, or (unless
 * `duplicates: 'allow'`) a line stored twice: no further delivery mends
 * those. On timeout it says which lines are missing
 * and what the emulator answered (test/support/delivery.ts).
 */
export async function waitForRows(emu: Emulator, dir: string, ds: string, expected: readonly string[], what: string, opts: { timeoutMs?: number; duplicates?: 'allow' } = {}): Promise<string[]> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const answers = async (): Promise<string> => {
    // The rows read may be ahead of the records of their requests.
    await emu.settled();
    return answersByStatus(emu.requests(), ds);
  };
  for (;;) {
    const got = rows(emu, dir, ds);
    const quarantined = emu.stats().quarantined[ds] ?? 0;
    const seen = { ...compareRows(got, expected), quarantined, sampleQuarantined: quarantined > 0 ? quarantineSample(path.join(dir, 'emu'), ds) : [] };
    const wrong = impossible(seen, opts.duplicates === 'allow');
    if (wrong) throw new Error(`${what}: ${wrong}\n  ${describeDelivery(seen, await answers())}`);
    if (seen.missing === 0) return got;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n  ${describeDelivery(seen, await answers())}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Poll an observable condition (emulator rows, files on disk) until it holds. */
export async function waitFor<T>(fn: () => T | Promise<T>, what: string, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function expectExactlyOnce(got: string[], expected: string[]): void {
  const counts = new Map<string, number>();
  for (const g of got) counts.set(g, (counts.get(g) ?? 0) + 1);
  const dups = [...counts].filter(([, n]) => n > 1).map(([l]) => l);
  const missing = expected.filter((e) => !counts.has(e));
  expect({ dups: dups.slice(0, 5), missing: missing.slice(0, 5), total: got.length }).toEqual({ dups: [], missing: [], total: expected.length });
}

/**
 * A metric's value in an in-process agent: the sample with exactly `labels`
 * (e.g. '{datasource="ev",reason="rejected"}'), or without labels the
 * unlabelled sample, else the last one; NaN when there is none.
 */
export async function gauge(agent: { metrics: { registry: { getSingleMetricAsString(n: string): Promise<string> } } }, name: string, labels = ''): Promise<number> {
  const samples = (await agent.metrics.registry.getSingleMetricAsString(name)).split('\n').filter((l) => l.startsWith(name));
  const line = samples.find((l) => l.startsWith(`${name}${labels} `)) ?? (labels === '' ? samples.at(-1) : undefined);
  return Number(line?.split(' ').at(-1) ?? 'NaN');
}


export { expectByteIdenticalRetries } from '../support/byte-identical.js';
