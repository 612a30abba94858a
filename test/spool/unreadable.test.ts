// A spool file that cannot be opened for a while (chmod 000 by its writer,
// a wrong owner after a restore) is neither gone nor new: one WARN
// file_unreadable naming it and its errno, its progress kept, and reading
// goes on where it was once it can be opened again (no line sent twice,
// none lost). It was skipped without a word. Root ignores file modes, so the
// agent runs as another uid (setpriv).
import { appendFileSync, chmodSync, chownSync, mkdirSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OTHER_UID, checkDelivery, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig, type AgentProcess } from '../process/helpers.js';

/** Does the agent hold `file` open? */
function holds(p: AgentProcess, file: string): boolean {
  const dir = `/proc/${p.pid}/fd`;
  return readdirSync(dir).some((fd) => {
    try {
      return readlinkSync(path.join(dir, fd)) === file;
    } catch {
      return false;
    }
  });
}

/**
 * While the file stays unreadable, the agent goes on scanning and reading:
 * shown by files written to another Data Source afterwards, each of which
 * only a later scan finds, arriving (twice, so the one WARN is seen to hold
 * across rounds rather than assumed after a sleep).
 */
async function laterRoundsPass(t: Awaited<ReturnType<typeof startEmu>>, spoolDir: string): Promise<void> {
  for (let round = 0; round < 2; round++) {
    appendFileSync(path.join(spoolDir, 'other', `r${round}.ndjson`), lines('o', round * 10, 10));
    await waitForDelivery(t, 'other', 'o', (round + 1) * 10, `a later scan's file (round ${round})`);
  }
}

describe('an unreadable spool file (process, non-root agent)', () => {
  it('is one WARN file_unreadable (file, EACCES), keeps its progress and reads on where it was when readable again', async () => {
    const dir = await tempDir();
    chmodSync(dir, 0o755);
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { spool: { idle_ms: 200 } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    appendFileSync(file, lines('u', 0, 50));
    const p = spawnAgent(cfg.configFile, {}, { uid: OTHER_UID });
    await p.started;
    await waitForDelivery(t, 'ev', 'u', 50, 'the first 50 lines');
    // Idle: its descriptor is given back, so the next read must open it again.
    await waitFor(() => !holds(p, file), 'the descriptor given back');

    chmodSync(file, 0o000);
    appendFileSync(file, lines('u', 50, 50));
    const warned = await waitFor(() => p.logs.find((l) => l.event === 'file_unreadable'), 'WARN file_unreadable');
    expect(warned).toMatchObject({ level: 40, file, code: 'EACCES', datasource: 'ev' });
    // Unreadable for a while: the scans and reads go on, and keep failing on it.
    mkdirSync(path.join(cfg.spoolDir, 'other'));
    await laterRoundsPass(t, cfg.spoolDir);
    chmodSync(file, 0o644);
    await waitFor(() => p.logs.some((l) => l.event === 'file_readable'), 'INFO file_readable');
    await waitForDelivery(t, 'ev', 'u', 100, 'all 100 lines');

    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(await checkDelivery(t, 'ev', 'u', 100)).toMatchObject({ rows: 100, duplicates: 0, missing: 0, unexpected: 0 });
    expect(p.logs.filter((l) => l.event === 'file_unreadable')).toHaveLength(1);
    expect(p.logs.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('one not yet followed (unreadable before the agent first saw it) is one WARN file_unreadable too, and read from its start when readable', async () => {
    const dir = await tempDir();
    chmodSync(dir, 0o755);
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { spool: { idle_ms: 200 } });
    const file = path.join(cfg.spoolDir, 'ev', 'b.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    mkdirSync(cfg.stateDir, { mode: 0o700 });
    chownSync(cfg.stateDir, OTHER_UID, OTHER_UID);
    appendFileSync(file, lines('n', 0, 40));
    chmodSync(file, 0o000);
    const p = spawnAgent(cfg.configFile, {}, { uid: OTHER_UID });
    await p.started;
    const warned = await waitFor(() => p.logs.find((l) => l.event === 'file_unreadable'), 'WARN file_unreadable');
    expect(warned).toMatchObject({ level: 40, file, code: 'EACCES', datasource: 'ev' });
    mkdirSync(path.join(cfg.spoolDir, 'other'));
    await laterRoundsPass(t, cfg.spoolDir);
    chmodSync(file, 0o644);
    await waitForDelivery(t, 'ev', 'n', 40, 'all 40 lines');
    await waitFor(() => p.logs.some((l) => l.event === 'file_readable'), 'INFO file_readable');

    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(await checkDelivery(t, 'ev', 'n', 40)).toMatchObject({ rows: 40, duplicates: 0, missing: 0, unexpected: 0 });
    expect(p.logs.filter((l) => l.event === 'file_unreadable')).toHaveLength(1);
  });
});
