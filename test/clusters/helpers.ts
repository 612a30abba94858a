// Shared test seams: the real emulator on port 0 with an injected clock, the
// CLI run in-process (main() with fake streams) and as a child process.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { main } from '../../src/cli/main.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

export const ORG = 'acme';
export const ADMIN = 'admin-secret';
export const AWS = 'aws-eu-central-1-01';
export const GCP = 'gcp-europe-west3-01';
export const DELAY_MS = 5000;

export interface TestEmulator {
  emu: Emulator;
  clock: { t: number };
  /** The modifying requests the emulator received. */
  writes(): ReturnType<Emulator['clusters']['requests']>;
  /** Flags that point the CLI at this emulator. */
  target: string[];
}

export async function startTestEmulator(replicaDelayMs = DELAY_MS): Promise<TestEmulator> {
  const clock = { t: 1_700_000_000_000 };
  const emu = await startEmulator({ listen: '127.0.0.1:0', org: ORG, adminToken: ADMIN, replicaDelayMs, now: () => clock.t });
  return {
    emu,
    clock,
    writes: () => emu.clusters.requests().filter((r) => r.method !== 'GET'),
    target: ['--org', ORG, '--token', ADMIN, '--base-url', emu.url],
  };
}

class Capture extends Writable {
  text = '';
  isTTY: boolean;
  constructor(tty: boolean) {
    super();
    this.isTTY = tty;
  }
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface InProcessOptions {
  /** Pretend stdin/stdout/stderr are a terminal. */
  tty?: boolean;
  /** Lines typed on stdin (a terminal answering the confirmation). */
  input?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** `spoolship clusters ...` through the real dispatcher, in this process. */
export async function runClusters(args: string[], opts: InProcessOptions = {}): Promise<RunResult> {
  const stdout = new Capture(opts.tty ?? false);
  const stderr = new Capture(opts.tty ?? false);
  const stdin = Object.assign(new PassThrough(), { isTTY: opts.tty ?? false });
  if (opts.input !== undefined) stdin.end(opts.input);
  const code = await main(['clusters', ...args], { stdout, stderr, stdin, env: opts.env ?? {}, cwd: opts.cwd ?? emptyDir() });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = path.join(ROOT, 'dist/cli.js');

/** Working directories made by emptyDir(), removed after each test (they piled up in the temp dir by the hundred). */
const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

export function emptyDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'spoolship-clusters-'));
  made.push(d);
  return d;
}

/** `node dist/cli.js clusters ...` as a child process (no TTY), in an empty working directory. */
export function spawnClusters(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH, ...opts.env };
    const child = execFile(process.execPath, [CLI, 'clusters', ...args], { cwd: opts.cwd ?? emptyDir(), env }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
    child.stdin?.end();
  });
}
