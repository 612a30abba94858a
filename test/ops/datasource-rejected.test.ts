// A DaemonSet-like start: 12 new Data Source directories against a platform
// that knows 3 of them, with a token that may only append. The 3 ship; the 9
// park one by one (datasource_rejected), shown in status and /readyz; one
// misnamed directory never stops the rest.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/status/report.js';
import { configFor, rows, startAgent, startEmu, tempDir, waitFor, writeLines } from '../pipeline/helpers.js';

describe('datasource_rejected (agent against the emulator)', () => {
  it('with an append-only token, the 3 known Data Sources ship and the 9 unknown ones park alone', async () => {
    const dir = await tempDir();
    const known = ['ds_a', 'ds_b', 'ds_c'];
    const unknown = Array.from({ length: 9 }, (_, i) => `new_${i}`);
    const emu = await startEmu(dir, { datasources: known, appendTokens: ['append-only-token'], rps: 1000 });
    for (const ds of [...known, ...unknown]) await writeLines(path.join(dir, 'spool', ds, 'a.ndjson'), [`{"ds":"${ds}"}`, `{"ds":"${ds}","n":2}`]);
    const base = configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } });
    const { agent } = await startAgent({ ...base, api: { ...base.api, token: 'append-only-token' } });
    for (const ds of known) await waitFor(() => rows(emu, dir, ds).length === 2, `${ds} shipped`);
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
});
