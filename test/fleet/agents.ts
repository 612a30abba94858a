// Agent processes for the fleet tests: the built CLI (`node dist/cli.js run`)
// with a config file per agent, its JSON log read from stderr, its admin
// endpoints on a port it picks, stopped with SIGTERM (or killed by PID in
// cleanup).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { stringify } from 'yaml';
import { withLevelNumber } from '../support/log-levels.js';
import { waitFor } from './helpers.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = path.join(ROOT, 'dist', 'cli.js');

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export class AgentProcess {
  readonly logs: LogLine[] = [];
  /** stderr lines that are not JSON log records (crashes). */
  readonly otherStderr: string[] = [];
  adminUrl: string | null = null;
  private exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    let partial = '';
    child.stderr!.on('data', (d: Buffer) => {
      partial += d.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('{')) {
          if (this.otherStderr.length < 50) this.otherStderr.push(line);
          continue;
        }
        const rec = withLevelNumber(JSON.parse(line) as LogLine);
        this.logs.push(rec);
        if (rec.event === 'started' && typeof rec.admin === 'string') this.adminUrl = rec.admin;
      }
    });
    this.exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Writes `config` to DIR/spoolship.yaml and starts `node dist/cli.js run -c` on it. */
  static async start(name: string, dir: string, config: object): Promise<AgentProcess> {
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, 'spoolship.yaml');
    await writeFile(file, stringify(config));
    return AgentProcess.spawn(name, process.execPath, [CLI, 'run', '-c', file], { cwd: dir, env: { ...process.env, SPOOLSHIP_TOKEN: '' } });
  }

  /** Any command line that ends in `spoolship run`; resolves once it logged "spoolship started". */
  static async spawn(name: string, cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<AgentProcess> {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'ignore', 'pipe'] });
    const agent = new AgentProcess(name, child);
    await waitFor(() => agent.adminUrl !== null || child.exitCode !== null, `${name} to log "spoolship started"`);
    if (!agent.adminUrl) throw new Error(`${name} exited with ${child.exitCode}: ${JSON.stringify(agent.logs.slice(-5))} ${agent.otherStderr.join('\n')}`);
    return agent;
  }

  get pid(): number {
    return this.child.pid!;
  }

  async metric(name: string): Promise<number | null> {
    const res = await request(`${this.adminUrl}/metrics`);
    const text = await res.body.text();
    const m = new RegExp(`^${name}(?:\\{\\})? (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  }

  async readyz(): Promise<{ status: number; body: unknown }> {
    const res = await request(`${this.adminUrl}/readyz`);
    return { status: res.statusCode, body: await res.body.json() };
  }

  /** SIGTERM and the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(this.pid, 'SIGTERM');
    return (await this.exit).code;
  }

  /** Cleanup: SIGKILL by PID if still running. */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(this.pid, 'SIGKILL');
    await this.exit;
  }
}

/** Unique NDJSON lines of about 90 bytes. */
export function lines(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => JSON.stringify({ id: `${prefix}-${i}`, n: i, pad: 'x'.repeat(48) }));
}
