import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { loadConfig, type LoadConfigOptions } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = path.join(ROOT, 'dist', 'cli.js');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fresh directory per test, removed after it. */
export function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'spoolship-config-'));
  dirs.push(d);
  return d;
}

export function writeFile(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** loadConfig with an isolated lookup: no /etc file unless a test names one. */
export function load(opts: Partial<LoadConfigOptions> & { cwd: string }) {
  return loadConfig({ env: {}, systemFile: path.join(opts.cwd, 'no-etc', 'spoolship.yaml'), ...opts });
}

/** The ConfigError thrown by `fn`, as `path: value: why` lines. */
export function problemsOf(fn: () => unknown): { error: ConfigError; lines: string[] } {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { error: err, lines: err.message.split('\n').slice(1).map((l) => l.trim()) };
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

/** Run the built CLI with exactly `env` (plus PATH), never the test runner's SPOOLSHIP_* variables. */
export function runCli(args: string[], opts: { cwd: string; env?: Record<string, string> }) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? '', ...opts.env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
