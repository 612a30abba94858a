// api.base_url has no default: a token must never go to a host nobody chose.
// `SPOOLSHIP_TOKEN=... spoolship run` in an empty directory once started and
// shipped to a placeholder host. Every command that sends exits 2 naming the
// key before it opens anything; check-config fails; commands that only read
// local state (status) still work.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir, writeFile } from './helpers.js';

const NAMED = /api\.base_url: null: not set, and it has no default/;

describe('no api.base_url', () => {
  it('run, send, dead-letter replay and check-config exit 2 naming the key; nothing is started', () => {
    const dir = tempDir();
    writeFile(dir, 'spool/ev/a.ndjson', '{"a":1}\n');
    const file = writeFile(dir, 'c.yaml', `spool:\n  dir: ${dir}/spool\nstate_dir: ${dir}/state\nadmin:\n  listen: ""\n`);
    const env = { SPOOLSHIP_TOKEN: 'p.secret-token-value' };
    for (const args of [
      ['run', '-c', file],
      ['send', '-c', file, '--datasource', 'ev', path.join(dir, 'spool/ev/a.ndjson')],
      ['dead-letter', 'replay', '-c', file],
      ['check-config', '-c', file],
    ]) {
      const r = runCli(args, { cwd: dir, env });
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(NAMED);
      expect(r.stderr).toContain('https://api.tinybird.co');
      expect(r.stderr).not.toContain('p.secret-token-value');
    }
    // run stopped before it took the state directory.
    expect(existsSync(path.join(dir, 'state'))).toBe(false);
    // The same through the environment override: SPOOLSHIP_API__BASE_URL fixes it.
    const fixed = runCli(['check-config', '-c', file], { cwd: dir, env: { ...env, SPOOLSHIP_API__BASE_URL: 'https://api.test' } });
    expect(fixed.code, fixed.stderr).toBe(0);
  });

  it('status, which sends nothing, does not need it', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', `spool:\n  dir: ${dir}/spool\nstate_dir: ${dir}/state\n`);
    const r = runCli(['status', '-c', file], { cwd: dir, env: {} });
    expect(r.stderr).not.toMatch(NAMED);
    expect(r.code, r.stderr).toBe(0);
  });
});
