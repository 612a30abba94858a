// Fixtures for the operator commands (`status`, `dead-letter`): the built CLI
// as a child process (async, so the in-process emulator and agent keep
// answering while it runs), a config file written for it, and dead-letter
// files written with the store's own record format.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { encodeRecord } from '../../src/deadletter/files.js';
import { toRecord, type DeadLetterInput } from '../../src/deadletter/store.js';
import type { Emulator } from '../../src/emulator/index.js';
import { onCleanup } from '../pipeline/helpers.js';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function startCli(args: string[], cwd: string, env: Record<string, string> = {}): { child: ChildProcess; done: Promise<CliResult>; stdout: () => string; stderr: () => string } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, done, stdout: () => stdout, stderr: () => stderr };
}

export function runCli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  return startCli(args, cwd, env).done;
}

type Tree = Record<string, unknown>;

/** A config file for the CLI: same layout as test/pipeline configFor (spool/, state/ under dir). */
export async function writeConfig(dir: string, emu: Emulator | null, overrides: Tree = {}): Promise<string> {
  const base: Tree = {
    api: emu ? { base_url: emu.url, token: emu.token, timeout_ms: 5000 } : { base_url: 'http://127.0.0.1:9', token: 'none', timeout_ms: 5000 },
    spool: { dir: path.join(dir, 'spool') },
    state_dir: path.join(dir, 'state'),
    retry: { initial_ms: 5, max_ms: 50 },
    admin: { listen: '' },
    log: { level: 'silent', format: 'json' },
  };
  const merged = merge(base, overrides);
  const file = path.join(dir, 'spoolship.yaml');
  await writeFile(file, stringify(merged));
  return file;
}

function merge(a: Tree, b: Tree): Tree {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' ? merge(a[k] as Tree, v as Tree) : v;
  }
  return out;
}

/** "127.0.0.1:PORT" of an admin URL (for a CLI config pointing at an in-process agent). */
export function listenOf(adminUrl: string): string {
  return new URL(adminUrl).host;
}

export function dlInput(ds: string, line: string, extra: Partial<DeadLetterInput> = {}): DeadLetterInput {
  const buf = Buffer.from(line);
  return { datasource: ds, reason: 'rejected', file: `/spool/${ds}/a.ndjson`, offset: 0, bytes: buf.length, status: 400, line: buf, ...extra };
}

/** Write dead-letter records exactly as DeadLetterStore does (one version 2 record per line). */
export async function writeDeadLetters(stateDir: string, file: string, inputs: DeadLetterInput[], at = new Date('2026-01-02T03:04:05.000Z')): Promise<string> {
  const dir = path.join(stateDir, 'dead-letter');
  await mkdir(dir, { recursive: true });
  const p = path.join(dir, file);
  await writeFile(p, inputs.map((i) => `${encodeRecord(toRecord(i, at))}\n`).join(''), { flag: 'a' });
  return p;
}
