// State files hold raw events (dead letters, queued bodies): they are the
// owner's alone whatever the umask the agent was started with.
import { appendFileSync, chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

function walk(dir: string): string[] {
  const out = [dir];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

describe('state file permissions (process)', () => {
  it('state files are 0600 and directories 0700 under a 022 umask; a token_file readable by others is a WARN', async () => {
    const before = process.umask(0o022);
    try {
      const dir = await tempDir();
      const t = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'BAD' }] });
      const tokenFile = path.join(dir, 'token');
      writeFileSync(tokenFile, `${t.emu.token}\n`);
      chmodSync(tokenFile, 0o644);
      const cfg = await writeConfig(dir, t, { api: { token: null, token_file: tokenFile } });
      const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
      mkdirSync(path.dirname(file), { recursive: true });
      appendFileSync(file, lines('p', 0, 20) + '{"BAD":1}\n');
      const p = spawnAgent(cfg.configFile);
      await p.started;
      await waitForDelivery(t, 'ev', 'p', 20, 'the good lines');
      await waitFor(() => p.logs.some((l) => l.event === 'dead_letters_written'), 'the dead letter');
      p.child.kill('SIGTERM');
      expect((await p.exited).code).toBe(0);
      expect(p.logs.filter((l) => l.event === 'token_file_readable')).toHaveLength(1);
      const modes = walk(cfg.stateDir).map((f) => [path.relative(cfg.stateDir, f) || '.', (statSync(f).mode & 0o777).toString(8)]);
      expect(modes.length).toBeGreaterThan(3);
      for (const [f, mode] of modes) expect(`${f} ${mode}`).toBe(`${f} ${statSync(path.join(cfg.stateDir, f!)).isDirectory() ? '700' : '600'}`);
    } finally {
      process.umask(before);
    }
  });
});
