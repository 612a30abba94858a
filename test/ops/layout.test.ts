// Layout mistakes are reported, never silent, and never make the agent unready.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { captureLogs } from '../support/log-capture.js';
import type { StatusReport } from '../../src/report/report.js';
import { configFor, onCleanup, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';
import { runCli, writeConfig } from './helpers.js';


async function status(agent: Agent): Promise<StatusReport> {
  return (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
}

describe('spool layout mistakes', () => {
  it('a directory with an invalid Data Source name: WARN once, shown in status, /readyz unaffected', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    await writeLines(path.join(dir, 'spool', 'good', 'a.ndjson'), ['{"a":1}']);
    await writeLines(path.join(dir, 'spool', 'bad-name', 'a.ndjson'), ['{"b":1}']);
    const { logs, log } = captureLogs();
    const agent = await Agent.start(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }), { log, rescanMs: 50 });
    onCleanup(() => agent.close());
    await waitForRows(emu, dir, 'good', ['{"a":1}'], 'the good line');
    const s = await waitFor(async () => ((await status(agent)).spool.skipped_dirs.length > 0 ? status(agent) : null), 'the skipped directory in status');
    expect(s.spool).toEqual({ dir: path.join(dir, 'spool'), missing: false, skipped_dirs: [path.join(dir, 'spool', 'bad-name')] });
    // A later scan (it finds a new file) logs no second WARN.
    await writeLines(path.join(dir, 'spool', 'good', 'b.ndjson'), ['{"a":2}']);
    await waitForRows(emu, dir, 'good', ['{"a":1}', '{"a":2}'], 'a file found by a later scan');
    expect(logs.filter((l) => l.event === 'datasource_dir_skipped')).toEqual([expect.objectContaining({ dir: path.join(dir, 'spool', 'bad-name'), level: 40 })]);
    expect(((await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean }).ready).toBe(true);
    expect(emu.stats().rows).toEqual({ good: 2 });
  });

  it('a missing spool.dir: WARN, status says so, and it is picked up when it appears', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const { logs, log } = captureLogs();
    const agent = await Agent.start(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }), { log, rescanMs: 50 });
    onCleanup(() => agent.close());
    await waitFor(() => logs.some((l) => l.event === 'spool_dir_missing'), 'the WARN');
    expect((await status(agent)).spool.missing).toBe(true);
    expect(((await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean }).ready).toBe(true);
    await mkdir(path.join(dir, 'spool'));
    await writeLines(path.join(dir, 'spool', 'late', 'a.ndjson'), ['{"late":1}']);
    await waitForRows(emu, dir, 'late', ['{"late":1}'], 'the line once spool.dir exists');
    expect(logs.some((l) => l.event === 'spool_dir_found')).toBe(true);
    expect((await status(agent)).spool.missing).toBe(false);
  });

  it('check-config and the offline status warn about a missing spool.dir', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const cfg = await writeConfig(dir, emu, { admin: { listen: '' }, spool: { dir: path.join(dir, 'nowhere') } });
    const c = await runCli(['check-config', '-c', cfg], dir);
    expect(c.code).toBe(0);
    expect(c.stderr).toContain(`warning: spool.dir ${path.join(dir, 'nowhere')} does not exist`);
    const s = await runCli(['status', '-c', cfg], dir);
    expect(s.stdout).toContain(`warning: spool.dir ${path.join(dir, 'nowhere')} does not exist`);
  });
});
