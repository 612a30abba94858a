// Who may change state_dir may forge what the agent and its commands read
// there (control.sock, the queue, the checkpoint). A state_dir left loose
// beforehand (a Kubernetes emptyDir is 0777) is tightened to 0700 with a
// WARN; one the agent cannot tighten (another user's, or root's and
// writable by others while the agent is not root) is refused at start.
import { chmodSync, chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OTHER_UID, spawnAgent, type AgentProcess, startEmu, tempDir, writeConfig } from '../process/helpers.js';

const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

/** Its exit, or 'started' when the agent started instead of refusing (then stopped, so the test fails at once). */
async function refusal(p: AgentProcess): Promise<number | null | 'started'> {
  const started = await p.started.then(() => true, () => false);
  if (!started) return (await p.exited).code;
  p.child.kill('SIGKILL');
  return 'started';
}

describe('state_dir ownership and mode at start', () => {
  it('a state_dir left 0777 is tightened to 0700 with one WARN state_dir_tightened; the next start finds it 0700 and says nothing', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir);
    chmodSync(cfg.stateDir, 0o777);
    const first = spawnAgent(cfg.configFile);
    await first.started;
    expect(mode(cfg.stateDir)).toBe('700');
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    const warned = first.logs.filter((l) => l.event === 'state_dir_tightened');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, dir: cfg.stateDir, mode_was: '777' });

    const second = spawnAgent(cfg.configFile);
    await second.started;
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(second.logs.filter((l) => l.event === 'state_dir_tightened')).toEqual([]);
  });

  it('a state_dir owned by another user is refused: exit 2 naming it, nothing written there', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    const p = spawnAgent(cfg.configFile);
    expect(await refusal(p), p.stderr).toBe(2);
    expect(p.stderr).toContain(cfg.stateDir);
    expect(p.stderr).toContain(`uid ${OTHER_UID}`);
    expect(existsSync(`${cfg.stateDir}/spoolship.lock`)).toBe(false);
  });

  it('a root-owned state_dir writable by others (an emptyDir) is refused for a non-root agent, which cannot tighten it', async () => {
    const dir = await tempDir();
    chmodSync(dir, 0o755);
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    mkdirSync(cfg.stateDir);
    chmodSync(cfg.stateDir, 0o777);
    const p = spawnAgent(cfg.configFile, {}, { uid: OTHER_UID });
    expect(await refusal(p), p.stderr).toBe(2);
    expect(p.stderr).toContain(cfg.stateDir);
    expect(p.stderr).toContain('writable by others');
    expect(mode(cfg.stateDir)).toBe('777');
    expect(existsSync(`${cfg.stateDir}/spoolship.lock`)).toBe(false);
  });

  it("a non-root agent makes its state_dir inside a root-owned 0777 volume (the Kubernetes sidecar's layout): created 0700, its own, no WARN", async () => {
    const dir = await tempDir();
    chmodSync(dir, 0o755);
    const volume = `${dir}/volume`;
    mkdirSync(volume);
    chmodSync(volume, 0o777);
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { state_dir: `${volume}/state` });
    const p = spawnAgent(cfg.configFile, {}, { uid: OTHER_UID });
    await p.started;
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(mode(cfg.stateDir)).toBe('700');
    expect(statSync(cfg.stateDir).uid).toBe(OTHER_UID);
    expect(p.logs.filter((l) => l.event === 'state_dir_tightened')).toEqual([]);
  });
});
