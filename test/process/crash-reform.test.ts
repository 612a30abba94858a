// After a kill -9, batches that were unanswered are re-formed from their
// recorded file ranges (SPEC section 3): only from the bytes they had. A
// copytruncate while the agent was down puts other lines at those offsets;
// those must not be sent as the batch (they are read as the file's new
// generation), and the batch's own lines, gone with the truncation, are
// counted as lost with an ERROR naming the ranges.
import { copyFileSync, truncateSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PART_BYTES } from '../../src/codec/parts.js';
import { expectByteIdenticalRetries } from '../support/byte-identical.js';
import { LINE_BYTES, checkDelivery, kill9, lines, metric, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

/** 500 lines of `o` in ev/app.ndjson, sent in a batch the emulator never answers, then kill -9. */
async function killedWithBatchUnanswered() {
  const dir = await tempDir();
  const t = await startEmu(dir, { faults: [{ kind: 'hang', p: 1 }] });
  const paths = await writeConfig(dir, t);
  const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
  await mkdir(path.dirname(file), { recursive: true });
  writeFileSync(file, lines('o', 0, 500));
  const first = spawnAgent(paths.configFile);
  await first.started;
  // A request arrives only once its intent is durable: the batch is recorded and unanswered.
  await waitFor(() => t.records.some((r) => r.outcome === 'hang'), 'a request hanging');
  await kill9(first);
  return { t, paths, file };
}

describe('crash re-forming from changed content (process)', () => {
  it('a batch unanswered at a kill -9, its file copytruncated before the restart: no other lines in its place, its lines counted lost', async () => {
    const { t, paths, file } = await killedWithBatchUnanswered();
    // copytruncate while the agent is down, and the application writes on:
    // same inode, lines of the same length at the same offsets.
    truncateSync(file, 0);
    writeFileSync(file, lines('n', 0, 600));
    t.emu.setFaults([]);
    const second = spawnAgent(paths.configFile);
    const admin = (await second.started)!;
    const result = (await waitFor(async () => {
      const r = await checkDelivery(t, 'ev', 'n', 600);
      return r.missing === 0 || r.duplicates > 0 ? r : null;
    }, 'the new lines'))!;
    expect({ missing: result.missing, duplicates: result.duplicates }, 'the new lines arrive once: none sent in place of the old batch').toEqual({ missing: 0, duplicates: 0 });
    // The resend runs before new data is read: counted by now.
    const lost = await metric(admin, 'spoolship_lines_lost_total', 'reason="file_gone"');
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect((await checkDelivery(t, 'ev', 'o', 500)).unique, 'the hung request stored nothing').toBe(0);
    expect(lost, 'the batch\'s 500 lines are counted lost').toBe(500);
    const gone = second.logs.filter((l) => l.event === 'resend_files_gone');
    expect(gone).toHaveLength(1);
    expect(gone[0]).toMatchObject({ datasource: 'ev', changed: 1, lines_lost: 500 });
  });

  it('a batch unanswered at a kill -9, its file copytruncated (a copy kept, as logrotate does): re-formed from the copy, every line once', async () => {
    const { t, paths, file } = await killedWithBatchUnanswered();
    // logrotate's copytruncate: the copy under a name out of the patterns,
    // then the file truncated, and the application writes on.
    copyFileSync(file, `${file}.1`);
    truncateSync(file, 0);
    writeFileSync(file, lines('n', 0, 600));
    t.emu.setFaults([]);
    const second = spawnAgent(paths.configFile);
    const admin = (await second.started)!;
    await waitFor(async () => ((await checkDelivery(t, 'ev', 'o', 500)).missing === 0 && (await checkDelivery(t, 'ev', 'n', 600)).missing === 0 ? true : null), 'the old and the new lines');
    const lost = await metric(admin, 'spoolship_lines_lost_total', 'reason="file_gone"');
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const [old, now] = [await checkDelivery(t, 'ev', 'o', 500), await checkDelivery(t, 'ev', 'n', 600)];
    expect({ old: [old.missing, old.duplicates], now: [now.missing, now.duplicates] }).toEqual({ old: [0, 0], now: [0, 0] });
    expect(lost).toBe(0);
    expect(second.logs.filter((l) => l.event === 'resend_files_gone')).toEqual([]);
    expect(second.logs.find((l) => l.event === 'resend_from_copy')).toMatchObject({ level: 30, file, copy: `${file}.1` });
    // The very batch that hung, byte for byte.
    expect(expectByteIdenticalRetries(t.records), 'the hung batch, sent again from the copy').toBe(1);
  });

  it('a batch of several zstd frames unanswered at a kill -9 is compressed again, after the restart, into the very same bytes', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'hang', p: 1 }] });
    const paths = await writeConfig(dir, t);
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    // One batch of ~3.5 MiB: four parts (codec/parts.ts), four frames.
    const count = Math.ceil((3.5 * PART_BYTES) / LINE_BYTES);
    writeFileSync(file, lines('f', 0, count));
    const first = spawnAgent(paths.configFile);
    await first.started;
    await waitFor(() => t.records.some((r) => r.outcome === 'hang'), 'a request hanging');
    await kill9(first);
    t.emu.setFaults([]);
    const second = spawnAgent(paths.configFile);
    await second.started;
    await waitFor(async () => ((await checkDelivery(t, 'ev', 'f', count)).missing === 0 ? true : null), 'every line');
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const hung = t.records.find((r) => r.outcome === 'hang')!;
    const again = t.records.find((r) => r.outcome !== 'hang' && r.decodedSha1 === hung.decodedSha1);
    expect(again?.decodedBytes, 'the hung batch, more than three parts, sent again').toBeGreaterThan(3 * PART_BYTES);
    expect(expectByteIdenticalRetries(t.records), 'the hung batch, sent again by the second agent').toBe(1);
  });
});
