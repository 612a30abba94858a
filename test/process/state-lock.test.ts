// The state lock between real agents: the kernel's flock, held by each
// agent's `flock` child, lets exactly one of several concurrent starters
// run; an agent killed with kill -9 leaves nothing that refuses its restart,
// even while its flock child is still letting go; a stop lets the lock go
// before the process exits; and with no flock on PATH the lock file alone
// still keeps a second agent out.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { kill9, onCleanup, spawnAgent, startEmu, tempDir, waitFor, writeConfig, type AgentProcess } from './helpers.js';

/** Pids of the processes named `comm` whose parent is `ppid`. */
function childrenOf(ppid: number, comm: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === comm && Number(fields[1]) === ppid) out.push(Number(name));
    } catch {
      /* ended meanwhile */
    }
  }
  return out;
}

function events(p: AgentProcess, event: string): AgentProcess['logs'] {
  return p.logs.filter((l) => l.event === event);
}

describe('the state lock between agents (process)', () => {
  it('kill -9 then an immediate restart starts, also while the dead agent\'s flock is still letting go; a stop lets the lock go before exiting', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const first = spawnAgent(cfg.configFile);
    await first.started;
    expect(childrenOf(first.pid, 'flock')).toHaveLength(1);
    await kill9(first);
    const second = spawnAgent(cfg.configFile);
    await second.started;
    expect(events(second, 'state_lock_fallback')).toEqual([]);

    // The dead agent's flock held back (stopped): it cannot end when its pipe
    // closes, so the restart finds the lock held with no live owner named,
    // says it waits, and starts once that flock is let run and ends.
    const [held] = childrenOf(second.pid, 'flock');
    expect(held).toBeDefined();
    process.kill(held!, 'SIGSTOP');
    onCleanup(async () => process.kill(held!, 'SIGKILL'));
    await kill9(second);
    const third = spawnAgent(cfg.configFile);
    await waitFor(() => events(third, 'state_lock_waiting').length > 0 || third.exitInfo !== null, 'the restart waiting for the dead agent\'s lock');
    expect(third.exitInfo, 'the restart was refused instead of waiting').toBeNull();
    expect(events(third, 'state_lock_waiting')[0]).toMatchObject({ dir: cfg.stateDir, wait_ms: 5000 });
    process.kill(held!, 'SIGCONT');
    await third.started;

    // A stop closes the pipe and waits for its flock child: gone before the agent exits.
    const [own] = childrenOf(third.pid, 'flock');
    third.child.kill('SIGTERM');
    expect((await third.exited).code).toBe(0);
    expect(existsSync(`/proc/${own}`), 'the stopped agent\'s flock child outlived it').toBe(false);
    const fourth = spawnAgent(cfg.configFile);
    await fourth.started;
    expect(events(fourth, 'state_lock_waiting')).toEqual([]);
  });

  it('three agents started at once on a state_dir with a dead owner\'s lock: exactly one runs, the others exit 2 naming it', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    // A lock file of an owner that is gone: each starter could judge it stale.
    mkdirSync(cfg.stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(cfg.stateDir, 'spoolship.lock'), '999999999\n');
    const agents = [spawnAgent(cfg.configFile), spawnAgent(cfg.configFile), spawnAgent(cfg.configFile)];
    const winner = await Promise.any(agents.map((a) => a.started.then(() => a)));
    const losers = agents.filter((a) => a !== winner);
    for (const l of losers) {
      expect((await l.exited).code).toBe(2);
      expect(l.stderr).toContain(`in use by process ${winner.pid}`);
    }
    expect(winner.exitInfo).toBeNull();
    expect(readFileSync(path.join(cfg.stateDir, 'spoolship.lock'), 'utf8').split('\n')[0]).toBe(String(winner.pid));
    winner.child.kill('SIGTERM');
    expect((await winner.exited).code).toBe(0);
  });

  it('the same config started twice (the same admin.listen): the second exits 2 naming the first, not the taken port', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const first = spawnAgent(cfg.configFile);
    await first.started;
    const admin = new URL(String(first.logs.find((l) => l.event === 'started')!.admin));
    // The config as an operator writes it: a fixed port, the one the first agent holds.
    await writeConfig(dir, t, { admin: { listen: admin.host } });
    const second = spawnAgent(cfg.configFile);
    expect((await second.exited).code).toBe(2);
    expect(second.stderr).toContain(`state_dir ${cfg.stateDir} is in use by process ${first.pid}`);
    expect(second.stderr).not.toContain('admin.listen');
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
  });

  it('no flock on PATH: one WARN, the lock file alone, and a second agent with or without flock is refused naming the first', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const bare = path.join(dir, 'bin-without-flock');
    mkdirSync(bare);
    const first = spawnAgent(cfg.configFile, { PATH: bare });
    await first.started;
    const fallback = events(first, 'state_lock_fallback');
    expect(fallback).toHaveLength(1);
    expect(fallback[0]).toMatchObject({ reason: 'flock_missing', dir: cfg.stateDir, level: 40 });
    expect(childrenOf(first.pid, 'flock')).toEqual([]);
    for (const env of [{ PATH: bare }, {}] as Array<Record<string, string>>) {
      const second = spawnAgent(cfg.configFile, env);
      expect((await second.exited).code).toBe(2);
      expect(second.stderr).toContain(`in use by process ${first.pid}`);
    }
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect(existsSync(path.join(cfg.stateDir, 'spoolship.lock'))).toBe(false);
  });
});
