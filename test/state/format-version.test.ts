// Every state file carries a format version (SPEC section 3, "Integrity of
// state"): the checkpoint (`version`), dead-letter records (`v`), and here
// the journal (a first record `{"t":"v","v":1}`) and the retry queue's
// records (`v` in each header). Files written before the version existed
// are read as version 1; a newer version stops the start with a message
// naming the file, rather than being misread.
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateTooNewError } from '../../src/errors.js';
import { JOURNAL_VERSION } from '../../src/state/journal.js';
import { StateStore } from '../../src/state/store.js';
import { relocateFiles } from '../../src/spool/relocate.js';
import { RetryQueue, type QueuedHeader } from '../../src/queue/retry-queue.js';
import { QUEUE_VERSION } from '../../src/queue/format.js';
import { frame, unframeAll } from '../../src/util/framing.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'spoolship-version-'));
  dirs.push(d);
  return d;
}
const openStore = (dir: string) => StateStore.open({ stateDir: dir, now: () => 0, onBackgroundError: (err) => { throw err; }, relocate: relocateFiles });
const meta = (key: string) => ({ key, dev: 1, ino: 7, gen: 0, fp: '', fpLen: 0, path: `/nonexistent/spoolship-test/${key}.ndjson`, ds: 'events' });

const journals = async (dir: string) => (await readdir(dir)).filter((n) => n.startsWith('journal-')).map((n) => path.join(dir, n));
async function records(file: string): Promise<Array<Record<string, unknown>>> {
  return unframeAll(await readFile(file)).payloads.map((p) => JSON.parse(p.toString('utf8')) as Record<string, unknown>);
}

describe('the journal format version', () => {
  it('a new journal starts with its version; a journal without one (an older release) still replays', async () => {
    const dir = await tempDir();
    const s = await openStore(dir);
    s.trackFile(meta('a'), 0);
    await s.close();
    const files = await journals(dir);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect((await records(f))[0], f).toEqual({ t: 'v', v: JOURNAL_VERSION });
    expect((await Promise.all(files.map(records))).flat().some((r) => r.t === 'f' && r.key === 'a')).toBe(true);
    // The same journals as an older release wrote them: no version record.
    for (const f of files) await writeFile(f, Buffer.concat((await records(f)).slice(1).map((r) => frame(Buffer.from(JSON.stringify(r))))));
    const again = await openStore(dir);
    expect(again.metaOf('a')?.key).toBe('a');
    await again.close();
  });

  it('a journal of a newer format stops the start, naming the file', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'journal-00000001.log');
    await writeFile(file, Buffer.concat([frame(Buffer.from(JSON.stringify({ t: 'v', v: JOURNAL_VERSION + 1 }))), frame(Buffer.from(JSON.stringify({ t: 'f', ...meta('a') })))]));
    const err = await openStore(dir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StateTooNewError);
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toContain(`format version ${JOURNAL_VERSION + 1}`);
  });
});

describe('the retry queue format version', () => {
  const header = (id: number): QueuedHeader => ({ id, ds: 'ds', encoding: null, rawLen: 4, lines: 1, queuedAt: 1000 });

  it('each record carries its version; a record of a newer format stops the start (never skipped as damaged), naming the segment', async () => {
    const dir = path.join(await tempDir(), 'queue');
    const corrupt: string[] = [];
    const q = await RetryQueue.open(dir, 1 << 20, (what) => corrupt.push(what));
    await q.append(header(1), Buffer.from('{}\n'));
    await q.close();
    const seg = path.join(dir, (await readdir(dir)).find((n) => n.endsWith('.q'))!);
    const data = await readFile(seg);
    const headLen = data.readUInt32LE(8);
    const head = JSON.parse(data.subarray(12, 12 + headLen).toString('utf8')) as QueuedHeader;
    expect(head.v).toBe(QUEUE_VERSION);
    // The same record as a newer release would write it (same length, a valid CRC).
    const newer = Buffer.from(JSON.stringify({ ...head, v: QUEUE_VERSION + 1 }));
    expect(newer.length).toBe(headLen);
    const body = data.subarray(12 + headLen);
    const payload = Buffer.concat([data.subarray(8, 12), newer, body]);
    await writeFile(seg, frame(payload));
    const again = await RetryQueue.open(dir, 1 << 20, (what) => corrupt.push(what));
    const err = await again.batchIds().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StateTooNewError);
    expect((err as Error).message).toContain(seg);
    await expect(again.take()).rejects.toBeInstanceOf(StateTooNewError);
    expect(corrupt).toEqual([]);
    await again.close();
  });
});
