// logrotate's default rotation (rename, create, then signal the application):
// until it reopens, the application goes on writing to the renamed file
// through its open descriptor. Those lines are shipped too, and a line it
// had half written is completed there, never sent split (SPEC section 3,
// "Rotation" and "Partial last line").
//
// The file-system steps that must look atomic to the agent (a rename and the
// new file's creation, an append and a move) are made with synchronous calls:
// the agent runs in this process, so no scan can fall between them.
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, jsonLines, onCleanup, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from './helpers.js';

/** An application's log descriptor, opened for appending. */
function openLog(file: string): { write(text: string): void } {
  mkdirSync(path.dirname(file), { recursive: true });
  const fd = openSync(file, 'a');
  onCleanup(async () => closeSync(fd));
  return { write: (text) => void writeSync(fd, text) };
}

/** Does this process hold a descriptor on `file`? */
async function holds(file: string): Promise<boolean> {
  for (const fd of await readdir('/proc/self/fd')) {
    if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === file) return true;
  }
  return false;
}

describe('a renamed or deleted file keeps being read until it is idle', () => {
  it.each([
    ['renamed out of the patterns in its directory', (file: string, spool: string) => renameSync(file, path.join(spool, 'ev', 'app.ndjson.1'))],
    [
      "moved to logrotate's olddir",
      (file: string, spool: string) => {
        const rotated = path.join(spool, '..', 'archive', 'app.ndjson.1');
        mkdirSync(path.dirname(rotated), { recursive: true });
        renameSync(file, rotated);
      },
    ],
    // An audit: about 1 s of lines lost per rotation, and the half-written line sent split.
    ["deleted while its writer still has it open (logrotate's rotate 0, or compress without delaycompress)", (file: string) => unlinkSync(file)],
  ])('%s: the late writer\'s lines and its half-written line arrive whole', async (_name, rotate) => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const spool = path.join(dir, 'spool');
    const file = path.join(spool, 'ev', 'app.ndjson');
    const app = openLog(file);
    const before = jsonLines('before', 0, 100);
    app.write(`${before.join('\n')}\n{"id":"half",`);
    // idle_ms long enough that the late writes below come well inside it.
    const { stop } = await startAgent(configFor(dir, emu, { spool: { idle_ms: 20_000 } }));
    await waitForRows(emu, dir, 'ev', before, 'the first 100 rows');
    // logrotate: rename (or remove), create; the application still writes to the old file.
    rotate(file, spool);
    const next = jsonLines('next', 0, 50);
    appendFileSync(file, `${next.join('\n')}\n`);
    // The new file's rows show that a scan has seen the old file go and a
    // read round has passed over its end.
    await waitForRows(emu, dir, 'ev', [...before, ...next], 'the new file');
    // The application finishes its line and writes on before it reopens.
    const late = jsonLines('late', 0, 300);
    app.write(`"n":1}\n${late.join('\n')}\n`);
    const expected = [...before, ...next, '{"id":"half","n":1}', ...late];
    await waitForRows(emu, dir, 'ev', expected, 'every line, the late ones too', { timeoutMs: 15_000 });
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
  });

  it.each(['keep', 'delete'] as const)(
    'a file idle for longer than idle_ms before the rename is still read for idle_ms after it (on_complete: %s): the late lines arrive, the half line whole',
    async (onComplete) => {
      const dir = await tempDir();
      const emu = await startEmu(dir);
      const spool = path.join(dir, 'spool');
      const file = path.join(spool, 'ev', 'app.ndjson');
      const rotated = path.join(spool, 'ev', 'app.ndjson.1');
      const app = openLog(file);
      const before = jsonLines('before', 0, 100);
      app.write(`${before.join('\n')}\n{"id":"half",`);
      const idleMs = 1000;
      const { agent, stop } = await startAgent(configFor(dir, emu, { spool: { idle_ms: idleMs, on_complete: onComplete } }));
      await waitForRows(emu, dir, 'ev', before, 'the first 100 rows');
      // Set-up, not a proof: the file goes idle well before logrotate comes.
      await new Promise((r) => setTimeout(r, idleMs * 1.5));
      renameSync(file, rotated);
      appendFileSync(file, `${jsonLines('next', 0, 10).join('\n')}\n`);
      // The agent has seen the rename once its status shows the new name.
      const files = async () => ((await agent.status()) as { datasources: Array<{ files: Array<{ path: string }> }> }).datasources.flatMap((d) => d.files.map((f) => f.path));
      await waitFor(async () => (await files()).includes(rotated), 'the rename seen');
      const late = jsonLines('late', 0, 50);
      app.write(`"n":1}\n${late.join('\n')}\n`);
      const expected = [...before, ...jsonLines('next', 0, 10), '{"id":"half","n":1}', ...late];
      await waitForRows(emu, dir, 'ev', expected, 'every line, the late ones too', { timeoutMs: 15_000 });
      // on_complete: delete still deletes it, once idle for idle_ms after the rename (and committed).
      if (onComplete === 'delete') await waitFor(() => !existsSync(rotated), 'the rotated file deleted once idle');
      await stop();
      expectExactlyOnce(rows(emu, dir, 'ev'), expected);
    },
  );

  it("a file idle and closed, grown and moved to olddir before a scan saw it grow: its tail is found and read", async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const spool = path.join(dir, 'spool');
    const file = path.join(spool, 'ev', 'app.ndjson');
    const before = jsonLines('before', 0, 100);
    await writeLines(file, before);
    const { stop } = await startAgent(configFor(dir, emu, { spool: { idle_ms: 100 } }));
    await waitForRows(emu, dir, 'ev', before, 'the first 100 rows');
    // Idle: its descriptor was given back.
    await waitFor(async () => !(await holds(file)), 'the idle descriptor to be closed');
    // Grown and moved away at once (no scan in between), as logrotate with
    // olddir does to a file its writer appended to just before.
    const tail = jsonLines('tail', 0, 200);
    appendFileSync(file, `${tail.join('\n')}\n`);
    mkdirSync(path.join(spool, 'ev', 'old'));
    renameSync(file, path.join(spool, 'ev', 'old', 'app.ndjson.1'));
    const next = jsonLines('next', 0, 10);
    await writeLines(file, next);
    const expected = [...before, ...tail, ...next];
    await waitForRows(emu, dir, 'ev', expected, 'every line, the late ones too', { timeoutMs: 15_000 });
    await stop();
    expectExactlyOnce(rows(emu, dir, 'ev'), expected);
  });
});
