// A SIGHUP with a changed config drains the old pipeline (for as long as
// answers take, up to shutdown_timeout_ms) before the new one starts. Scans
// go on meanwhile: a file created during the drain is in the state, so one
// renamed out of the patterns before the new pipeline's first scan is found
// by its identity and shipped. Nothing scanned during the drain before, and
// such a file was lost though the agent never stopped (found by a chaos
// soak: 0 of 19 lines in 3 of 3 runs).
import { appendFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorsIn, getJson, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

describe('a SIGHUP reload drain (process)', () => {
  it('a file created during the drain and renamed out of the patterns before the new pipeline starts ships', async () => {
    const dir = await tempDir();
    // Every answer takes 2 s: the drain waits for the request on the wire.
    const t = await startEmu(dir, { latencyMs: 2000 });
    const paths = await writeConfig(dir, t, { spool: { idle_ms: 10_000 }, shutdown_timeout_ms: 20_000 });
    const ev = path.join(paths.spoolDir, 'ev');
    const ev2 = path.join(paths.spoolDir, 'ev2');
    mkdirSync(ev, { recursive: true });
    mkdirSync(ev2, { recursive: true });
    const agent = spawnAgent(paths.configFile);
    const admin = await agent.started;
    writeFileSync(path.join(ev, 'a.ndjson'), lines('d', 0, 10));
    await waitFor(async () => ((await getJson(`${admin}/status`)).body as { in_flight: number }).in_flight > 0, 'a request on the wire');
    await writeConfig(dir, t, { spool: { idle_ms: 10_000 }, shutdown_timeout_ms: 20_000, batch: { linger_ms: 150 } });
    agent.child.kill('SIGHUP');
    await waitFor(() => agent.logs.some((l) => l.event === 'reloading'), 'the drain under way');
    const fresh = path.join(ev2, 'b.ndjson');
    writeFileSync(fresh, lines('n', 0, 10));
    const at = (event: string, file?: string) => agent.logs.findIndex((l) => l.event === event && (file === undefined || l.file === file));
    await waitFor(() => at('file_discovered', fresh) >= 0, 'b.ndjson discovered');
    expect(at('pipeline_closed_for_reload'), 'discovered by the old pipeline, during its drain').toBe(-1);
    renameSync(fresh, `${fresh}.1`);
    appendFileSync(`${fresh}.1`, lines('n', 10, 3));
    await waitFor(() => at('pipeline_closed_for_reload') >= 0, 'the new pipeline');
    await waitForDelivery(t, 'ev2', 'n', 13, 'every line of the file renamed during the drain');
    await waitForDelivery(t, 'ev', 'd', 10, 'the lines of the drain');
    expect(errorsIn(agent)).toEqual([]);
  });
});
