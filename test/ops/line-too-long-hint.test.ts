// The way out `dead-letter replay` names for line_too_long records must work:
// `spoolship send` with the same config dead-letters the line again, so the
// hint says to raise spool.max_line_bytes and batch.max_bytes (within the
// plan's request limit) for that send, or to purge.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFor, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';
import { CLI, runCli, writeConfig } from './helpers.js';

function records(file: string): Array<Record<string, unknown>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('line_too_long: the hint of dead-letter replay', () => {
  it('names the limits to raise for send, not send as is (which dead-letters the line again), and purge; following it ships the line', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const long = JSON.stringify({ big: 'x'.repeat(3000) });
    const spoolFile = path.join(dir, 'spool', 'app', 'a.ndjson');
    await writeLines(spoolFile, ['{"a":1}', long, '{"a":2}']);
    const limits = { spool: { max_line_bytes: 1000 }, batch: { max_bytes: 2000 } };
    const { stop } = await startAgent(configFor(dir, emu, limits));
    const dlFile = path.join(dir, 'state', 'dead-letter', 'app.ndjson');
    await waitForRows(emu, dir, 'app', ['{"a":1}', '{"a":2}'], 'the short lines stored');
    await waitFor(() => records(dlFile).length === 1, 'the long one dead-lettered');
    await stop();
    const [rec] = records(dlFile);
    expect(rec).toMatchObject({ reason: 'line_too_long', bytes: long.length, file: spoolFile });

    const cfg = await writeConfig(dir, emu, limits);
    const replay = await runCli(['dead-letter', 'replay', '-c', cfg], dir);
    expect(replay.code).toBe(0);
    const hint = replay.stderr;
    expect(hint).toContain('1 record(s) can never be replayed');
    expect(hint).toContain('spool.max_line_bytes');
    expect(hint).toContain('batch.max_bytes');
    expect(hint).toContain('dead-letter purge --reason line_too_long');

    // The whole line, where the record says it is.
    const whole = readFileSync(rec!.file as string).subarray(rec!.offset as number, (rec!.offset as number) + (rec!.bytes as number));
    const lineFile = path.join(dir, 'line.ndjson');
    await writeFile(lineFile, Buffer.concat([whole, Buffer.from('\n')]));
    // With the config as it is, send cannot ship it: dead-lettered again, exit 1.
    const asIs = await runCli(['send', '-c', cfg, '-d', 'app', '--json', lineFile], dir);
    expect(asIs.code).toBe(1);
    expect(rows(emu, dir, 'app')).not.toContain(long);
    // With both limits raised above the line's length, as the hint says, it ships.
    const bigDir = path.join(dir, 'raised');
    await mkdir(bigDir);
    const raised = await writeConfig(bigDir, emu, { spool: { dir: path.join(dir, 'spool'), max_line_bytes: 5000 }, state_dir: path.join(dir, 'state'), batch: { max_bytes: 5000 } });
    // The hint's own command line, through a shell.
    const cmd = `tail -c +${(rec!.offset as number) + 1} '${rec!.file as string}' | head -n 1 | '${process.execPath}' '${CLI}' send -c '${raised}' -d app --json`;
    // Not spawnSync: the emulator answering it runs on this thread.
    const sent = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn('sh', ['-c', cmd], { cwd: dir });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(sent.code, sent.stderr).toBe(0);
    expect(rows(emu, dir, 'app').filter((r) => r === long)).toHaveLength(1);
  });
});
