// The reading commands against a state_dir that does not exist: nothing to
// show, exit 0, but said on stderr (a typo'd path, or the wrong directory
// without -c, looked like a healthy empty agent), and so is a missing
// config file, as check-config says it.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../pipeline/helpers.js';
import { runCli } from './helpers.js';

describe('reading commands and a state_dir that does not exist', () => {
  it('status, queue list and dead-letter list say so on stderr, exit 0, and create nothing', async () => {
    const dir = await tempDir();
    const cwd = path.join(dir, 'elsewhere');
    await mkdir(cwd);
    const state = path.join(cwd, 'state');
    for (const args of [['status'], ['queue', 'list'], ['dead-letter', 'list']]) {
      const r = await runCli(args, cwd, { SPOOLSHIP_ADMIN__LISTEN: '' });
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stderr, args.join(' ')).toContain(`state_dir ${state} does not exist: no agent has kept state there (give the agent's config with -c, or set state_dir)`);
      expect(r.stderr, args.join(' ')).toContain('no config file found');
    }
    expect(existsSync(state)).toBe(false);
    // With a config that names an existing state_dir: no such note.
    await mkdir(state);
    const r = await runCli(['queue', 'list'], cwd);
    expect(r.stderr).not.toContain('does not exist');
  });
});
