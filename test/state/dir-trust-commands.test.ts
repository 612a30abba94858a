// The commands that write a stopped agent's state_dir (`queue dead-letter`,
// `dead-letter replay`, `dead-letter purge`) judge it as the agent does at start
// (state/dir-trust.ts): another user's, or root's and writable by others, is
// refused (exit 2, nothing read, sent or written there); one of their own
// left loose is tightened to 0700; one that does not exist is not created.
// A replay as root once sent the lines another user had planted in a
// state_dir that user owned, with root's token.
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dlInput, writeDeadLetters } from '../ops/helpers.js';
import { asUid, OTHER_UID, startEmu, tempDir, writeConfig } from '../process/helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

/** The real CLI, as root or (setpriv) as `uid`. */
function cli(args: string[], cwd: string, uid?: number): Promise<{ code: number; stdout: string; stderr: string }> {
  const argv = asUid([process.execPath, CLI, ...args], uid);
  return new Promise((resolve) => {
    execFile(argv[0]!, argv.slice(1), { cwd, env: { PATH: process.env.PATH ?? '', HOME: '/tmp' } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** StateDirUnsafeError's text (errors.ts), not the control socket's refusal. */
const UNSAFE = 'so another user could replace what the agent keeps there';

describe('state_dir ownership for the commands on a stopped agent', () => {
  it('dead-letter replay as root refuses a state_dir another user owns: exit 2 naming it, nothing sent, the records untouched', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    const planted = await writeDeadLetters(cfg.stateDir, 'ev.ndjson', [dlInput('ev', '{"planted":1}')]);
    const before = readFileSync(planted);
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    const r = await cli(['dead-letter', 'replay', '-c', cfg.configFile], dir);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(cfg.stateDir);
    expect(r.stderr).toContain(`uid ${OTHER_UID}`);
    expect(r.stderr).toContain(UNSAFE);
    expect(t.emu.stats().rows.ev ?? 0).toBe(0);
    expect(readFileSync(planted).equals(before)).toBe(true);
    expect(existsSync(path.join(cfg.stateDir, 'dead-letter', 'spoolship.lock'))).toBe(false);
  });

  it("dead-letter replay as the agent's user refuses root's state_dir writable by others (an emptyDir): exit 2, nothing sent", async () => {
    const dir = await tempDir();
    chmodSync(dir, 0o755);
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir);
    chmodSync(cfg.stateDir, 0o777);
    // Anyone may write there: here, a line for the agent's token to carry.
    await writeDeadLetters(cfg.stateDir, 'ev.ndjson', [dlInput('ev', '{"planted":1}')]);
    chmodSync(path.join(cfg.stateDir, 'dead-letter'), 0o777);
    const r = await cli(['dead-letter', 'replay', '-c', cfg.configFile], dir, OTHER_UID);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('writable by others');
    expect(r.stderr).toContain(UNSAFE);
    expect(t.emu.stats().rows.ev ?? 0).toBe(0);
    expect(mode(cfg.stateDir)).toBe('777');
  });

  it('queue dead-letter on a state_dir that does not exist moves nothing and creates nothing', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const all = await cli(['queue', 'dead-letter', '-c', cfg.configFile, '--datasource', 'ev', '--json'], dir);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout)).toEqual({ moved_batches: 0, moved_lines: 0 });
    const one = await cli(['queue', 'dead-letter', '-c', cfg.configFile, '7'], dir);
    expect(one.code, one.stderr).toBe(1);
    expect(one.stderr).toContain('no queued batch 7');
    expect(existsSync(cfg.stateDir)).toBe(false);
  });

  it('queue dead-letter tightens its own state_dir left 0755 to 0700, saying so, as the agent does', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir);
    chmodSync(cfg.stateDir, 0o755);
    const r = await cli(['queue', 'dead-letter', '-c', cfg.configFile, '--datasource', 'ev'], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(mode(cfg.stateDir)).toBe('700');
    expect(r.stderr).toContain('state_dir_tightened');
    expect(r.stderr).toContain('755');
  });

  it('queue dead-letter as root on a state_dir another user owns: exit 2, no lock or file written there', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    const r = await cli(['queue', 'dead-letter', '-c', cfg.configFile, '--datasource', 'ev'], dir);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`uid ${OTHER_UID}`);
    expect(existsSync(path.join(cfg.stateDir, 'spoolship.lock'))).toBe(false);
    expect(existsSync(path.join(cfg.stateDir, 'dead-letter'))).toBe(false);
  });

  it('dead-letter purge as root on a state_dir another user owns: exit 2, the records untouched', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    const planted = await writeDeadLetters(cfg.stateDir, 'ev.ndjson', [dlInput('ev', '{"kept":1}')]);
    const before = readFileSync(planted);
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    const r = await cli(['dead-letter', 'purge', '--yes', '-c', cfg.configFile], dir);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`uid ${OTHER_UID}`);
    expect(r.stderr).toContain(UNSAFE);
    expect(readFileSync(planted).equals(before)).toBe(true);
  });
});
