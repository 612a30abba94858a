// Which spool paths may be read: spool.follow_symlinks and spool.exclude,
// end to end (the agent, real symlinks, the emulator on port 0).
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { captureLogs } from '../support/log-capture.js';
import { configFor, onCleanup, rows, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';

/** Start the agent on the spool below; returns once `appRows`, and only they, are stored for app. */
async function run(mode: 'inside' | 'any' | 'never', appRows: string[], exclude: string[] = []) {
  const dir = await tempDir();
  const emu = await startEmu(dir);
  const spool = path.join(dir, 'spool');
  // Outside the spool: a secret the agent must not ship.
  await writeFile(path.join(dir, 'token.txt'), '{"secret":"hunter2"}\n');
  await writeLines(path.join(spool, 'app', 'real.ndjson'), ['{"real":1}']);
  await writeLines(path.join(spool, 'archive', 'kept.log'), ['{"inside":1}']);
  await symlink(path.join(dir, 'token.txt'), path.join(spool, 'app', 'leak.ndjson'));
  await symlink(path.join(spool, 'archive', 'kept.log'), path.join(spool, 'app', 'inside.ndjson'));
  await writeLines(path.join(spool, 'app', 'skip-me.ndjson'), ['{"excluded":1}']);
  await mkdir(path.join(spool, 'app'), { recursive: true });
  // A Data Source directory that is a symlink to a directory outside the spool.
  await writeLines(path.join(dir, 'elsewhere', 'other.ndjson'), ['{"linked_dir":1}', '{"linked_dir":2}']);
  await symlink(path.join(dir, 'elsewhere'), path.join(spool, 'linked'));
  const { logs, log } = captureLogs();
  const agent = await Agent.start(configFor(dir, emu, { spool: { follow_symlinks: mode, exclude } }), { log, rescanMs: 50 });
  onCleanup(() => agent.close());
  // A file written after the others: once it arrives, every earlier file had its scan.
  await writeLines(path.join(spool, 'app', 'z-last.ndjson'), ['{"last":1}']);
  // A row that is not one of appRows (a link or an excluded file read) fails the wait at once, naming it.
  await waitForRows(emu, dir, 'app', appRows, `app's rows, the last file's among them (follow_symlinks ${mode})`);
  await waitFor(() => emu.stats().rows.app === rows(emu, dir, 'app').length, 'rows settled');
  expect(rows(emu, dir, 'app').sort()).toEqual([...appRows].sort());
  return { emu, logs, dir };
}

/** With every link followed: the secret outside the spool too. */
const ANY_APP_ROWS = ['{"excluded":1}', '{"inside":1}', '{"last":1}', '{"real":1}', '{"secret":"hunter2"}'];

describe('spool.follow_symlinks and spool.exclude', () => {
  it('inside (default): a link to a file outside the spool is skipped with one WARN; a link inside is read', async () => {
    const r = await run('inside', ['{"excluded":1}', '{"inside":1}', '{"last":1}', '{"real":1}']);
    const warned = r.logs.filter((l) => l.event === 'symlink_skipped');
    expect(warned.map((w) => [w.file, w.target])).toEqual(
      expect.arrayContaining([
        [path.join(r.dir, 'spool', 'app', 'leak.ndjson'), path.join(r.dir, 'token.txt')],
        // The linked Data Source directory: one WARN naming the link, not one per file in it.
        [path.join(r.dir, 'spool', 'linked'), path.join(r.dir, 'elsewhere')],
      ]),
    );
    expect(warned).toHaveLength(2);
    expect(rows(r.emu, r.dir, 'linked')).toEqual([]);
  });

  it('any: a Data Source directory that is a symlink is read like any other (it was silently skipped)', async () => {
    const r = await run('any', ANY_APP_ROWS);
    await waitForRows(r.emu, r.dir, 'linked', ['{"linked_dir":1}', '{"linked_dir":2}'], 'the linked directory read');
  });

  it('any: every link is followed', async () => {
    const r = await run('any', ANY_APP_ROWS);
    expect(r.logs.filter((l) => l.event === 'symlink_skipped')).toEqual([]);
  });

  it('never: no link is followed, inside or not', async () => {
    const r = await run('never', ['{"excluded":1}', '{"last":1}', '{"real":1}']);
    expect(r.logs.filter((l) => l.event === 'symlink_skipped')).toHaveLength(3);
    expect(rows(r.emu, r.dir, 'linked')).toEqual([]);
  });

  it('exclude: matching paths are never read ("**/..." matches anywhere)', async () => {
    await run('inside', ['{"inside":1}', '{"last":1}', '{"real":1}'], ['**/skip-*.ndjson']);
  });
});
