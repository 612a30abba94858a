// The order of durable steps the guarantees rest on (README "Delivery
// guarantee", docs/guarantees.md rules 1-2), watched on the real file system
// by spying on every FileHandle's write and sync and on rename:
// - a batch's intent is written and fsynced before its first request leaves;
// - a state file is replaced by writing and fsyncing `name.tmp`, renaming it
//   over `name`, then fsyncing the directory.
// Skipping any of these fsyncs loses lines on a power cut and nothing else
// would notice.
import { readlinkSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { atomicWrite } from '../../src/util/fsx.js';
import { startEmulator } from '../../src/emulator/index.js';
import { configFor, jsonLines, onCleanup, startAgent, tempDir, waitForRows, writeLines } from '../pipeline/helpers.js';

type Step = { op: 'write'; file: string; text: string } | { op: 'sync'; file: string } | { op: 'rename'; from: string; to: string } | { op: 'request' };

/** Every write, sync and rename from now on, in order, with the file each descriptor names. */
async function watchSteps(): Promise<Step[]> {
  const steps: Step[] = [];
  const probe = await fsp.open(os.tmpdir(), 'r');
  const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown>; writeFile: (...a: unknown[]) => Promise<unknown>; sync: () => Promise<void> };
  await probe.close();
  const fileOf = (fd: number) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return '?';
    }
  };
  const sync = proto.sync;
  for (const name of ['write', 'writeFile'] as const) {
    const original = proto[name];
    vi.spyOn(proto, name).mockImplementation(async function (this: { fd: number }, ...args: unknown[]) {
      const data = args[0];
      const text = Buffer.isBuffer(data) ? data.toString('latin1') : String(data);
      steps.push({ op: 'write', file: fileOf(this.fd), text });
      return original.apply(this, args);
    });
  }
  vi.spyOn(proto, 'sync').mockImplementation(async function (this: { fd: number }) {
    const file = fileOf(this.fd);
    await sync.apply(this);
    steps.push({ op: 'sync', file });
  });
  const rename = fsp.rename;
  vi.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
    await rename(from, to);
    steps.push({ op: 'rename', from: String(from), to: String(to) });
  });
  return steps;
}

afterEach(() => vi.restoreAllMocks());

describe('fsync order', () => {
  it('a state file is written to name.tmp, fsynced, renamed over name, then its directory fsynced', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-fsync-'));
    onCleanup(() => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'checkpoint.json');
    await atomicWrite(file, 'first');
    const steps = await watchSteps();
    await atomicWrite(file, ['sec', 'ond']);
    const ours = steps.filter((s) => ('file' in s && (s.file.startsWith(file) || s.file === dir)) || s.op === 'rename');
    const shown = ours.map((s) => (s.op === 'rename' ? `rename ${path.basename(s.from)} -> ${path.basename(s.to)}` : 'file' in s ? `${s.op} ${path.basename(s.file)}` : s.op));
    expect(shown).toEqual([
      'write checkpoint.json.tmp',
      'write checkpoint.json.tmp',
      'sync checkpoint.json.tmp',
      'rename checkpoint.json.tmp -> checkpoint.json',
      `sync ${path.basename(dir)}`,
    ]);
    expect(await readFile(file, 'utf8')).toBe('second');
    expect(await readFile(`${file}.prev`, 'utf8')).toBe('first');
  });

  it("a batch's intent is written and fsynced to the journal before its first request arrives", async () => {
    const dir = await tempDir();
    const steps = await watchSteps();
    const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(dir, 'emu'), recordRequests: true, onEventsArrival: () => steps.push({ op: 'request' }) });
    onCleanup(() => emu.close());
    const lines = jsonLines('f', 0, 100);
    await writeLines(path.join(dir, 'spool', 'ev', 'a.ndjson'), lines);
    const { stop } = await startAgent(configFor(dir, emu));
    await waitForRows(emu, dir, 'ev', lines, 'the rows');
    await stop();
    const journal = (s: Step) => 'file' in s && /journal-\d+\.log$/.test(s.file);
    const intentAt = steps.findIndex((s) => s.op === 'write' && journal(s) && s.text.includes('"t":"i"'));
    const intent = steps[intentAt] as Extract<Step, { op: 'write' }> | undefined;
    const syncedAt = steps.findIndex((s, i) => i > intentAt && s.op === 'sync' && s.file === intent?.file);
    const requestAt = steps.findIndex((s) => s.op === 'request');
    expect(intentAt, 'the intent was written to a journal').toBeGreaterThanOrEqual(0);
    expect(requestAt, 'a request arrived').toBeGreaterThanOrEqual(0);
    expect(syncedAt, 'the journal was fsynced after the intent was written').toBeGreaterThan(intentAt);
    expect(requestAt, 'the request left only after that fsync').toBeGreaterThan(syncedAt);
  });
});
