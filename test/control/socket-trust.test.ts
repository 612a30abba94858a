// The commands trust control.sock only when it is a socket owned by their
// own user or root, in a state_dir no other user may write: another local
// user once replaced it in a 0777 state_dir and root's `queue list` printed
// the forged batch. Each test runs a forged "agent" on the socket and counts
// its connections: a refusal never talks to it.
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OTHER_UID, onCleanup, tempDir } from '../process/helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function cli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const ROW = { id: 7, datasource: 'ev', state: 'queued', lines: 1, bytes: 10, compressed_bytes: 10, age_ms: 0, attempts: 1, last_status: 503, last_error: 'FORGED' };

/** A state_dir (0700, ours) with a config for it; admin off, so `status` asks the control socket. */
async function stateDir(): Promise<{ dir: string; state: string; sock: string; configFile: string }> {
  const dir = await tempDir('spoolship-ctl-');
  const state = path.join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  const configFile = path.join(dir, 'spoolship.yaml');
  writeFileSync(configFile, `state_dir: ${state}\nspool:\n  dir: ${path.join(dir, 'spool')}\nadmin:\n  listen: ""\n`);
  return { dir, state, sock: path.join(state, 'control.sock'), configFile };
}

/** Listen on `sock` answering every request with one queued row; returns how many connections it got. */
async function forgedAgent(sock: string, row: object = ROW): Promise<() => number> {
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    s.once('data', () => s.end(`${JSON.stringify({ ok: true, rows: [row] })}\n`));
  });
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return () => connections;
}

describe('control socket trust (process)', () => {
  it('a socket owned by our own user is asked (the control case)', async () => {
    const s = await stateDir();
    const connections = await forgedAgent(s.sock);
    const r = await cli(['queue', 'list', '-c', s.configFile, '--json'], s.dir);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: 7 });
    expect(connections()).toBe(1);
  });

  it("queue list's table shows an answer's control characters escaped (a server's error text, a file name)", async () => {
    const s = await stateDir();
    await forgedAgent(s.sock, { ...ROW, datasource: 'ev\u001b[2J', last_error: '\u001b[31mred\u0007\nforged line' });
    const r = await cli(['queue', 'list', '-c', s.configFile], s.dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    expect(r.stdout).toContain('\\u001b[31mred\\u0007\\nforged line');
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(2);
  });

  it("a socket owned by another user is refused by queue list and status: exit 2 naming it, the forgery never asked", async () => {
    const s = await stateDir();
    const connections = await forgedAgent(s.sock);
    chownSync(s.sock, OTHER_UID, OTHER_UID);
    for (const args of [['queue', 'list'], ['queue', 'list', '--json'], ['status']]) {
      const r = await cli([...args, '-c', s.configFile], s.dir);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(s.sock);
      expect(r.stdout).not.toContain('FORGED');
    }
    expect(connections()).toBe(0);
  });

  it('something other than a socket at control.sock is refused', async () => {
    const s = await stateDir();
    writeFileSync(s.sock, '');
    const r = await cli(['queue', 'list', '-c', s.configFile], s.dir);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(s.sock);
  });

  it('a state_dir writable by other users is refused even with our own socket in it (it could be swapped under the command)', async () => {
    const s = await stateDir();
    const connections = await forgedAgent(s.sock);
    chmodSync(s.state, 0o777);
    const r = await cli(['queue', 'list', '-c', s.configFile], s.dir);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(s.state);
    expect(r.stdout).not.toContain('FORGED');
    expect(connections()).toBe(0);
  });
});
