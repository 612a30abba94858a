import { decodeCheckpoint } from '../../src/state/checkpoint-format.js';
import type { StatusReport } from '../../src/report/report.js';
import { appendFile, mkdir, readdir, readFile, rename, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, jsonLines, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

describe('rotation and file handling', () => {
  it('rename-and-create: the renamed file keeps its progress and its late writes; the new file is read from 0', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'app.ndjson');
    const a = jsonLines('a', 0, 1000);
    await writeLines(file, a);
    const { stop } = await startAgent(configFor(dir, emu));
    await waitForRows(emu, dir, 'ev', a, 'first file');
    await rename(file, path.join(dir, 'spool', 'ev', 'app.1.ndjson'));
    const late = jsonLines('late', 0, 200);
    await writeLines(path.join(dir, 'spool', 'ev', 'app.1.ndjson'), late);
    const b = jsonLines('b', 0, 300);
    await writeLines(file, b);
    await waitForRows(emu, dir, 'ev', [...a, ...late, ...b], 'all rows');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...a, ...late, ...b]);
  });

  it('a file renamed out of the patterns is read to its end, and its partial last line is sent whole', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'app.ndjson');
    const a = jsonLines('a', 0, 100);
    await writeLines(file, a);
    const { stop } = await startAgent(configFor(dir, emu));
    await waitForRows(emu, dir, 'ev', a, 'first rows');
    const more = jsonLines('more', 0, 400);
    await writeLines(file, more);
    await appendFile(file, '{"tail":"no newline"}');
    await rename(file, path.join(dir, 'spool', 'ev', 'app.ndjson.1'));
    await waitForRows(emu, dir, 'ev', [...a, ...more, '{"tail":"no newline"}'], 'rows after rename out of patterns');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...a, ...more, '{"tail":"no newline"}']);
  });

  it('copytruncate: detects the truncation, reads again from 0 and counts it', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'app.ndjson');
    const a = jsonLines('a', 0, 500, 50);
    await writeLines(file, a);
    const { agent, stop } = await startAgent(configFor(dir, emu));
    await waitForRows(emu, dir, 'ev', a, 'before truncation');
    await truncate(file, 0);
    const b = jsonLines('b', 0, 50);
    await writeLines(file, b);
    await waitForRows(emu, dir, 'ev', [...a, ...b], 'after truncation');
    const metrics = await agent.metrics.registry.getSingleMetricAsString('spoolship_truncations_total');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...a, ...b]);
    expect(metrics).toMatch(/spoolship_truncations_total 1/);
  });

  it('a new file per period, and delete of a fully read file followed by a new one (inode reuse)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const d = path.join(dir, 'spool', 'ev');
    const expected: string[] = [];
    const { stop } = await startAgent(configFor(dir, emu));
    for (let period = 0; period < 4; period++) {
      const lines = jsonLines(`p${period}`, 0, 100);
      expected.push(...lines);
      await writeLines(path.join(d, `app-2026-01-0${period + 1}.ndjson`), lines);
      await waitForRows(emu, dir, 'ev', expected, `period ${period}`);
    }
    // Delete and re-create under the same name: the inode is often reused; the
    // fingerprint of the first bytes tells the files apart.
    const target = path.join(d, 'app-2026-01-01.ndjson');
    await rm(target);
    const fresh = jsonLines('fresh', 0, 100);
    expected.push(...fresh);
    await writeLines(target, fresh);
    await waitForRows(emu, dir, 'ev', expected, 'recreated file');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
  });

  it('restart: an unchanged file is trusted by its stat; one rewritten in place while down (same inode, same size) is read again from 0', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const config = configFor(dir, emu);
    const kept = path.join(dir, 'spool', 'ev', 'kept.ndjson');
    const rewritten = path.join(dir, 'spool', 'ev', 'rewritten.ndjson');
    const a = jsonLines('a', 0, 50);
    const b = jsonLines('b', 0, 50);
    await writeLines(kept, a);
    await writeLines(rewritten, b);
    const first = await startAgent(config);
    await waitForRows(emu, dir, 'ev', [...a, ...b], 'the first 100 rows');
    await first.stop();
    // The checkpoint keeps each file's identity-checked stat.
    const parsed = decodeCheckpoint<{ version: number; files: Array<{ path: string; seen?: number[] }> }>(await readFile(path.join(dir, 'state', 'checkpoint.json'), 'utf8'));
    if (!parsed.ok) throw new Error(parsed.why);
    const cp = parsed.value;
    expect(cp.files.map((f) => [path.basename(f.path), f.seen?.length]).sort()).toEqual([
      ['kept.ndjson', 3],
      ['rewritten.ndjson', 3],
    ]);
    // Same inode, same size, other lines: only the first bytes tell.
    const c = b.map((l) => l.replace('"b-', '"c-'));
    const ino = (await stat(rewritten)).ino;
    await writeFile(rewritten, `${c.join('\n')}\n`);
    expect((await stat(rewritten)).ino).toBe(ino);
    const second = await startAgent(config);
    await waitForRows(emu, dir, 'ev', [...a, ...b, ...c], 'the rewritten file again');
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...a, ...b, ...c]);
  });

  it('follows a symlinked path to its target', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const real = path.join(dir, 'elsewhere', 'real.log');
    const lines = jsonLines('s', 0, 300);
    await writeLines(real, lines);
    await mkdir(path.join(dir, 'spool', 'ev'), { recursive: true });
    await symlink(real, path.join(dir, 'spool', 'ev', 'linked.ndjson'));
    // The target is outside spool.dir: followed only with follow_symlinks: any (inside is test/spool/admission.test.ts).
    const { stop } = await startAgent(configFor(dir, emu, { spool: { follow_symlinks: 'any' } }));
    await waitForRows(emu, dir, 'ev', lines, 'rows');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), lines);
  });

  it('a line over max_line_bytes goes to the dead-letter store, never sent, and the rest flows', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    const long = JSON.stringify({ big: 'y'.repeat(5000) });
    const huge = JSON.stringify({ huge: 'z'.repeat(3 * 1024 * 1024) }); // longer than the 1 MiB read buffer
    const ok1 = jsonLines('ok', 0, 10);
    const ok2 = jsonLines('ok', 10, 10);
    await writeLines(file, [...ok1, long, ...ok2, huge, '{"last":1}']);
    const { stop } = await startAgent(configFor(dir, emu, { spool: { max_line_bytes: 1000 } }));
    await waitForRows(emu, dir, 'ev', [...ok1, ...ok2, '{"last":1}'], 'rows');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), [...ok1, ...ok2, '{"last":1}']);
    const dl = readFileSync(path.join(dir, 'state', 'dead-letter', 'ev.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(dl).toHaveLength(2);
    expect(dl[0]).toMatchObject({ datasource: 'ev', reason: 'line_too_long', file, bytes: long.length, status: null });
    expect(dl[0].offset).toBe(ok1.join('\n').length + 1);
    expect(dl[0].line.length).toBe(1000); // kept truncated to max_line_bytes
    expect(typeof dl[0].at).toBe('string');
    expect(dl[1]).toMatchObject({ reason: 'line_too_long', bytes: huge.length });
  });

  it('ships 2,000 small files and gives idle descriptors back', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const expected: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const lines = jsonLines(`f${i}`, 0, 3);
      expected.push(...lines);
      await writeLines(path.join(dir, 'spool', 'many', `f${String(i).padStart(4, '0')}.ndjson`), lines);
    }
    const { stop } = await startAgent(configFor(dir, emu, { batch: { linger_ms: 100 }, spool: { idle_ms: 100 } }));
    await waitForRows(emu, dir, 'many', expected, 'all files', { timeoutMs: 60_000 });
    // Idle files are closed: the process holds far fewer descriptors than files.
    const fds = await waitFor(async () => {
      const n = (await readdir('/proc/self/fd')).length;
      return n < 500 ? n : 0;
    }, 'descriptors to be released');
    await stop();
    expectExactlyOnce(rows(emu, dir, 'many'), expected);
    expect(fds).toBeLessThan(500);
  });

  it('routes spool.sources globs first, then <dir>/<datasource>/*.ndjson; start_at end skips existing data', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    await writeLines(path.join(dir, 'logs', 'web', 'access.json'), ['{"src":"glob"}']);
    await writeLines(path.join(dir, 'spool', 'plain', 'a.ndjson'), ['{"src":"dir"}']);
    await writeLines(path.join(dir, 'spool', 'plain', 'ignored.txt'), ['{"src":"not ndjson"}']);
    const config = configFor(dir, emu, { spool: { sources: [{ include: ['logs/**/*.json'], datasource: 'from_glob' }] } });
    const { stop } = await startAgent(config);
    await waitForRows(emu, dir, 'from_glob', ['{"src":"glob"}'], 'the glob route');
    await waitForRows(emu, dir, 'plain', ['{"src":"dir"}'], 'the directory route');
    await stop();
    expect(rows(emu, dir, 'from_glob')).toEqual(['{"src":"glob"}']);
    expect(rows(emu, dir, 'plain')).toEqual(['{"src":"dir"}']);

    const dir2 = await tempDir();
    const emu2 = await startEmu(dir2);
    const f = path.join(dir2, 'spool', 'ev', 'a.ndjson');
    await writeLines(f, ['{"old":1}']);
    const second = await startAgent(configFor(dir2, emu2, { spool: { start_at: 'end' } }));
    // Append only once the first scan has found the file (at its end): before that, the new line would be "existing data" too.
    await waitFor(async () => ((await second.agent.status()) as { datasources: Array<{ files: unknown[] }> }).datasources.some((d) => d.files.length > 0), 'the file found at start');
    await writeLines(f, ['{"new":1}']);
    await waitForRows(emu2, dir2, 'ev', ['{"new":1}'], 'new line');
    await second.stop();
    expect(rows(emu2, dir2, 'ev')).toEqual(['{"new":1}']);
  });

  it('start_at: end applies to the first start only: after a restart, files created while the agent was down are read from their start', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const d = path.join(dir, 'spool', 'ev');
    await writeLines(path.join(d, 'a.ndjson'), ['{"old":1}']);
    const config = configFor(dir, emu, { spool: { start_at: 'end' } });
    const first = await startAgent(config);
    await waitFor(async () => ((await first.agent.status()) as { datasources: Array<{ files: unknown[] }> }).datasources.some((x) => x.files.length > 0), 'the file found at its end');
    await writeLines(path.join(d, 'a.ndjson'), ['{"a":2}']);
    await waitForRows(emu, dir, 'ev', ['{"a":2}'], 'the line after the start');
    await first.stop();
    // While it is down: logrotate renames and creates, and another file appears.
    await writeLines(path.join(d, 'a.ndjson'), ['{"a":3}']);
    await rename(path.join(d, 'a.ndjson'), path.join(d, 'a.ndjson.1'));
    await writeLines(path.join(d, 'a.ndjson'), ['{"c":1}', '{"c":2}']);
    await writeLines(path.join(d, 'new.ndjson'), ['{"n":1}']);
    const second = await startAgent(config);
    const expected = ['{"a":2}', '{"a":3}', '{"c":1}', '{"c":2}', '{"n":1}'];
    await waitForRows(emu, dir, 'ev', expected, 'every line written while it was down');
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
  });

  it("logrotate's olddir beside spool.dir while the agent was down: the file is found there and its tail read", async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await writeLines(file, jsonLines('a', 0, 10));
    const config = configFor(dir, emu);
    const first = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 10), 'the first lines');
    await first.stop();
    // While it is down: more lines, then `olddir ../../old` (beside spool.dir).
    await writeLines(file, jsonLines('a', 10, 5));
    await mkdir(path.join(dir, 'old'));
    await rename(file, path.join(dir, 'old', 'a.ndjson.1'));
    const second = await startAgent(config);
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 15), 'the tail written before the move');
    await second.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), jsonLines('a', 0, 15));
  });

  it('on_complete: delete removes a file once committed, idle and superseded; keep leaves it', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const d = path.join(dir, 'spool', 'ev');
    await writeLines(path.join(d, 'old.ndjson'), jsonLines('old', 0, 50));
    const { stop } = await startAgent(configFor(dir, emu, { spool: { on_complete: 'delete', idle_ms: 100 } }));
    await waitForRows(emu, dir, 'ev', jsonLines('old', 0, 50), 'old rows');
    await writeFile(path.join(d, 'new.ndjson'), `${jsonLines('new', 0, 50).join('\n')}\n`);
    await waitFor(async () => !(await readdir(d)).includes('old.ndjson'), 'old file deleted');
    await waitForRows(emu, dir, 'ev', [...jsonLines('old', 0, 50), ...jsonLines('new', 0, 50)], 'new rows');
    await stop();
    expect(await readdir(d)).toEqual(['new.ndjson']);
  });

  it('on_complete: delete, across a restart: a file renamed out of the patterns while the agent was down, or renamed before its stop, is deleted once shipped and idle', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const d = path.join(dir, 'spool', 'ev');
    const app = path.join(d, 'app.ndjson');
    await writeLines(app, jsonLines('a', 0, 50));
    await writeLines(path.join(d, 'web.ndjson'), jsonLines('w', 0, 50));
    // Long idle_ms: nothing is deleted before the stop.
    const first = await startAgent(configFor(dir, emu, { spool: { on_complete: 'delete', idle_ms: 600_000 } }));
    await waitForRows(emu, dir, 'ev', [...jsonLines('a', 0, 50), ...jsonLines('w', 0, 50)], 'the first rows');
    // Renamed while the agent runs (journaled as renamed away), then the stop.
    await rename(path.join(d, 'web.ndjson'), path.join(d, 'web.ndjson.1'));
    await waitFor(async () => (await readFile(path.join(dir, 'state', 'checkpoint.json'), 'utf8').catch(() => '')).includes('web.ndjson.1') || (await journalsMention(dir, 'web.ndjson.1')), 'the rename journaled');
    await first.stop();
    // Renamed while the agent is down, and a new file at the name.
    await rename(app, path.join(d, 'app.ndjson.1'));
    await writeLines(app, jsonLines('b', 0, 50));
    const second = await startAgent(configFor(dir, emu, { spool: { on_complete: 'delete', idle_ms: 100 } }));
    await waitFor(async () => !(await readdir(d)).some((n) => n.endsWith('.1')), 'both renamed files deleted');
    await waitForRows(emu, dir, 'ev', [...jsonLines('a', 0, 50), ...jsonLines('w', 0, 50), ...jsonLines('b', 0, 50)], 'every row');
    await second.stop();
    expect(await readdir(d)).toEqual(['app.ndjson']);
    expectExactlyOnce(rows(emu, dir, 'ev'), [...jsonLines('a', 0, 50), ...jsonLines('w', 0, 50), ...jsonLines('b', 0, 50)]);
  });

  it('on_complete: delete, across two restarts: a file renamed out of the patterns while the agent was down stays renamed away after a start that did not finish it', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const d = path.join(dir, 'spool', 'ev');
    const app = path.join(d, 'app.ndjson');
    await writeLines(app, jsonLines('a', 0, 50));
    const first = await startAgent(configFor(dir, emu, { spool: { on_complete: 'delete', idle_ms: 600_000 } }));
    await waitForRows(emu, dir, 'ev', jsonLines('a', 0, 50), 'the first rows');
    await first.stop();
    await rename(app, `${app}.1`);
    // Started and stopped before idle_ms (a soak killed it): the file was found renamed, not finished.
    const second = await startAgent(configFor(dir, emu, { spool: { on_complete: 'delete', idle_ms: 600_000 } }));
    await waitFor(async () => ((await second.agent.status()) as StatusReport).datasources.some((ds) => ds.files.some((f) => f.path === `${app}.1`)), 'the renamed file followed');
    await second.stop();
    expect(await readdir(d)).toEqual(['app.ndjson.1']);
    // The next start knows it was renamed out of the patterns (not a config that matches it no more): deleted once idle.
    const third = await startAgent(configFor(dir, emu, { spool: { on_complete: 'delete', idle_ms: 100 } }));
    await waitFor(async () => (await readdir(d)).length === 0, 'the renamed file deleted');
    await third.stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), jsonLines('a', 0, 50));
  });

  it('validate: json sends non-object lines to dead letters as invalid_json', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const bad = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // {"\xff\xfe"} is not UTF-8
    const file = path.join(dir, 'spool', 'ev', 'a.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, Buffer.concat([Buffer.from('{"ok":1}\n[1,2]\nnot json\n'), bad, Buffer.from('\n{"ok":2}\n')]));
    const { stop } = await startAgent(configFor(dir, emu, { validate: 'json' }));
    await waitForRows(emu, dir, 'ev', ['{"ok":1}', '{"ok":2}'], 'the JSON objects');
    await stop();
    expect(rows(emu, dir, 'ev')).toEqual(['{"ok":1}', '{"ok":2}']);
    const dl = readFileSync(path.join(dir, 'state', 'dead-letter', 'ev.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(dl.map((r) => r.reason)).toEqual(['invalid_json', 'invalid_json', 'invalid_json']);
    expect(dl[0].line).toBe('[1,2]');
    expect(dl[2].line_base64).toBe(bad.toString('base64'));
    expect(dl[2].offset).toBe('{"ok":1}\n[1,2]\nnot json\n'.length);
  });
});

/** Whether any journal of the state names `text`. */
async function journalsMention(dir: string, text: string): Promise<boolean> {
  const stateDir = path.join(dir, 'state');
  for (const n of await readdir(stateDir)) if (n.startsWith('journal-') && (await readFile(path.join(stateDir, n))).includes(text)) return true;
  return false;
}
