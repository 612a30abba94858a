// New files are discovered while the pipeline has no room: a scan does not
// wait for the read round blocked on the room (slow or hung answers with a
// backlog). A file created then and renamed out of the patterns before the
// room came back was never known, and all of its lines were lost.
import { appendFileSync, closeSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, jsonLines, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';

describe('discovery while the pipeline has no room', () => {
  it('a file created behind a backlog the server does not answer is discovered at once; renamed away before any room came back, all of its lines ship', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { rps: 1000 });
    const spool = path.join(dir, 'spool', 'ds');
    const backlog = jsonLines('b', 0, 20_000, 100);
    await writeLines(path.join(spool, 'a.ndjson'), backlog);
    // Every request hangs until api.timeout_ms and is retried: the pipeline stays full, the reader waits for room.
    emu.setFaults([{ kind: 'hang' }]);
    const logs: Array<Record<string, unknown>> = [];
    const config = configFor(dir, emu, { api: { timeout_ms: 2000 }, batch: { max_bytes: 65_536 }, limits: { max_in_flight: 1 } });
    // No periodic rescan: the directory watch alone tells of the new file.
    const { stop } = await startAgent(config, { logs, rescanMs: 3_600_000 });
    await waitFor(() => emu.requests().length > 0, 'the first request hangs');
    const fresh = path.join(spool, 'b.ndjson');
    const lines = jsonLines('n', 0, 50, 50);
    await writeLines(fresh, lines);
    await waitFor(() => logs.some((l) => l.event === 'file_discovered' && l.file === fresh), 'b.ndjson discovered while the reader waits for room');
    // logrotate's default: renamed out of the patterns, written on until the writer reopens.
    renameSync(fresh, `${fresh}.1`);
    const more = jsonLines('n', 50, 5, 50);
    appendFileSync(`${fresh}.1`, more.map((l) => `${l}\n`).join(''));
    emu.setFaults([]);
    await waitForRows(emu, dir, 'ds', [...backlog, ...lines, ...more], 'the backlog and every line of the renamed file', { timeoutMs: 60_000 });
    await stop();
    expect(logs.filter((l) => l.level === 50)).toEqual([]);
  });

  it('a file discovered behind that backlog and deleted before any read (logrotate rotate 0, the writer still at it) ships through the descriptor taken at its discovery', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { rps: 1000 });
    const spool = path.join(dir, 'spool', 'ds');
    const backlog = jsonLines('b', 0, 20_000, 100);
    await writeLines(path.join(spool, 'a.ndjson'), backlog);
    emu.setFaults([{ kind: 'hang' }]);
    const logs: Array<Record<string, unknown>> = [];
    const config = configFor(dir, emu, { api: { timeout_ms: 2000 }, batch: { max_bytes: 65_536 }, limits: { max_in_flight: 1 } });
    const { stop } = await startAgent(config, { logs, rescanMs: 3_600_000 });
    await waitFor(() => emu.requests().length > 0, 'the first request hangs');
    const fresh = path.join(spool, 'b.ndjson');
    const lines = jsonLines('n', 0, 50, 50);
    const fd = openSync(fresh, 'a');
    writeSync(fd, lines.map((l) => `${l}\n`).join(''));
    await waitFor(() => logs.some((l) => l.event === 'file_discovered' && l.file === fresh), 'b.ndjson discovered while the reader waits for room');
    unlinkSync(fresh);
    const more = jsonLines('n', 50, 5, 50);
    writeSync(fd, more.map((l) => `${l}\n`).join(''));
    closeSync(fd);
    emu.setFaults([]);
    await waitForRows(emu, dir, 'ds', [...backlog, ...lines, ...more], 'the backlog and every line of the deleted file', { timeoutMs: 60_000 });
    await stop();
    expect(logs.filter((l) => l.level === 50)).toEqual([]);
  });
});
