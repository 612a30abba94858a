// A DaemonSet-like start: 12 new Data Source directories against a platform
// that knows 3 of them. With a token that may only append, the 3 ship; the 9
// park one by one (datasource_rejected), shown in status and /readyz; one
// misnamed directory never stops the rest. With a token that may create
// them, everything ships: the creations past 5 a minute wait for their 429's
// Retry-After.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/report/report.js';
import { configFor, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';
import { JumpClock } from '../support/jump-clock.js';

/** The two lines written to each Data Source's directory. */
const linesOf = (ds: string): string[] => [`{"ds":"${ds}"}`, `{"ds":"${ds}","n":2}`];

describe('datasource_rejected (agent against the emulator)', () => {
  it('with an append-only token, the 3 known Data Sources ship and the 9 unknown ones park alone', async () => {
    const dir = await tempDir();
    const known = ['ds_a', 'ds_b', 'ds_c'];
    const unknown = Array.from({ length: 9 }, (_, i) => `new_${i}`);
    const emu = await startEmu(dir, { datasources: known, appendTokens: ['append-only-token'], rps: 1000 });
    for (const ds of [...known, ...unknown]) await writeLines(path.join(dir, 'spool', ds, 'a.ndjson'), linesOf(ds));
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } });
    const { agent } = await startAgent({ ...base, api: { ...base.api, token: 'append-only-token' } });
    for (const ds of known) await waitForRows(emu, dir, ds, linesOf(ds), `${ds} shipped`);
    const status = await waitFor(async () => {
      const s = (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
      return unknown.every((ds) => s.datasources.find((d) => d.datasource === ds)?.parked === 'datasource_rejected') ? s : null;
    }, 'the 9 unknown Data Sources parked');
    for (const ds of known) expect(status.datasources.find((d) => d.datasource === ds)?.parked).toBeNull();
    const ready = (await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean; reasons: string[] };
    expect(ready).toEqual({ ready: false, reasons: ['datasource_rejected'] });
    const metrics = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    expect(metrics).toContain('spoolship_parked{reason="datasource_rejected"} 1');
    expect(metrics).toContain('spoolship_parked{reason="token_rejected"} 0');
    for (const ds of unknown) expect(rows(emu, dir, ds)).toEqual([]);
  });

  it('with a CREATE token, all 12 ship: creations past 5 a minute wait for the Retry-After of their 429, nothing parks', async () => {
    const dir = await tempDir();
    const known = ['ds_a', 'ds_b', 'ds_c'];
    const unknown = Array.from({ length: 9 }, (_, i) => `new_${i}`);
    // One clock for the emulator's per-minute window and the agent's waits: the test moves it past the minute.
    const clock = new JumpClock();
    const emu = await startEmu(dir, { datasources: known, rps: 1000, now: () => clock.now() });
    for (const ds of [...known, ...unknown]) await writeLines(path.join(dir, 'spool', ds, 'a.ndjson'), linesOf(ds));
    const { agent } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }), { clock });
    for (const ds of known) await waitForRows(emu, dir, ds, linesOf(ds), `${ds} shipped`);
    await waitFor(() => unknown.filter((ds) => rows(emu, dir, ds).length === 2).length === 5, 'five Data Sources created');
    await waitFor(() => (emu.stats().requests_by_status['429'] ?? 0) > 0, 'a creation past 5 a minute refused with 429');
    expect(unknown.filter((ds) => rows(emu, dir, ds).length > 0)).toHaveLength(5);
    // Waiting for the Retry-After is not a park.
    const during = (await (await fetch(`${agent.adminUrl}/readyz`)).json()) as { ready: boolean };
    expect(during.ready).toBe(true);
    // Past the minute. A 429 answered just before the jump but read by the
    // agent just after it counts its Retry-After from the new time: jump
    // again (every 2 s of real time) until every creation went through.
    clock.jump(61_000);
    const jumps = setInterval(() => clock.jump(61_000), 2000);
    try {
      for (const ds of unknown) await waitForRows(emu, dir, ds, linesOf(ds), `${ds} created and shipped`);
    } finally {
      clearInterval(jumps);
    }
    const status = (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
    expect(status.datasources.filter((d) => d.parked !== null)).toEqual([]);
    const metrics = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    expect(metrics).toContain('spoolship_parked{reason="datasource_rejected"} 0');
    expect(metrics).toMatch(/spoolship_retries_total\{reason="429"\} [1-9]/);
  });
});
