// state_dir deleted under a running agent: it must notice, log an ERROR
// naming it and exit 1, so that a second agent never ships the same files
// alongside it.
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lines, spawnAgent, startEmu, tempDir, waitForDelivery, writeConfig } from './helpers.js';

describe('state_dir removed while running (process)', () => {
  it('logs state_dir_lost as an ERROR and exits 1; the admin port and the lock are let go', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    appendFileSync(file, lines('x', 0, 100));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await waitForDelivery(t, 'ev', 'x', 100, 'the first lines');
    rmSync(cfg.stateDir, { recursive: true, force: true });
    const exit = await Promise.race([p.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
    expect(exit, 'the agent exited').not.toBeNull();
    expect(exit!.code).toBe(1);
    const lost = p.logs.find((l) => l.event === 'state_dir_lost');
    expect(lost).toMatchObject({ what: 'state_dir', how: 'removed', path: cfg.stateDir });
    // SPEC section 3: "it logs an ERROR". JSON logs: the level as a word, the time in ISO 8601.
    expect(lost!.level).toBe(50);
    expect((lost as { levelWord?: string }).levelWord).toBe('error');
    expect(String(lost!.time)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('a fatal error closes everything and exits 1 (it never stays up without shipping)', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const p = spawnAgent(cfg.configFile);
    await p.started;
    // Replacing the lock file is the same fatal path as any other fatal error.
    const lock = path.join(cfg.stateDir, 'spoolship.lock');
    rmSync(lock);
    appendFileSync(lock, '12345\n'); // another pid, maybe the same inode
    const exit = await Promise.race([p.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
    expect(exit?.code).toBe(1);
    expect(p.logs.some((l) => l.event === 'exiting_after_fatal')).toBe(true);
  });
});
