// Shared fixtures for the emulator tests: a per-test emulator and temp dir,
// an undici Agent per test, an injected clock and scripted randomness.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { afterEach } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import type { ManualClock } from '../support/manual-clock.js';

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!().catch(() => {});
});

export function onCleanup(fn: () => Promise<unknown>): void {
  cleanups.push(fn);
}

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-emu-test-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export async function startEmu(opts: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({ listen: '127.0.0.1:0', ...opts });
  onCleanup(() => emu.close());
  return emu;
}

/** Waits until the emulator waits on `clock` (its `timers`), and returns how long that wait is. */
export async function nextWait(clock: ManualClock): Promise<number> {
  while (clock.waiting === 0) await new Promise((r) => setTimeout(r, 1));
  return clock.nextWakeInMs()!;
}

export interface FakeClock {
  now: () => number;
  advance(ms: number): void;
}

export function fakeClock(startMs = 1_700_000_000_000): FakeClock {
  let t = startMs;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

/** Returns the given values in turn (then repeats the last). */
export function scriptedRandom(values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
}

export interface PostOptions {
  name?: string | null;
  token?: string | null;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: () => unknown;
}

export function newAgent(options: ConstructorParameters<typeof Agent>[0] = {}): Agent {
  const agent = new Agent(options);
  onCleanup(() => agent.destroy());
  return agent;
}

/** POST /v0/events; name defaults to "events", wait to true, token to the emulator's. */
export async function postEvents(emu: Emulator, opts: PostOptions = {}, dispatcher?: Agent): Promise<Answer> {
  const url = new URL('/v0/events', emu.url);
  const name = opts.name === undefined ? 'events' : opts.name;
  if (name !== null) url.searchParams.set('name', name);
  for (const [k, v] of Object.entries({ wait: 'true', ...opts.query })) url.searchParams.set(k, v);
  const token = opts.token === undefined ? emu.token : opts.token;
  const headers: Record<string, string> = { ...opts.headers };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await request(url, { method: 'POST', headers, body: opts.body ?? '{"a":1}\n', dispatcher });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
}

export async function getJson(url: string, dispatcher?: Agent): Promise<{ status: number; body: unknown }> {
  const res = await request(url, { dispatcher });
  return { status: res.statusCode, body: await res.body.json() };
}

export async function readStored(dir: string, name: string): Promise<string> {
  return readFile(path.join(dir, `${name}.ndjson`), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
}

export function ndjson(count: number, from = 0): string {
  return Array.from({ length: count }, (_, i) => `{"i":${from + i}}\n`).join('');
}
