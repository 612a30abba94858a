// Rows the platform quarantines (lines that are not JSON objects, with
// validate: none) are counted, shown in status and logged as counts.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { captureLogs } from '../support/log-capture.js';
import type { StatusReport } from '../../src/report/report.js';
import { configFor, onCleanup, startEmu, tempDir, waitFor, writeLines } from '../pipeline/helpers.js';

describe('quarantined rows', () => {
  it('count in spoolship_rows_quarantined_total and status rows_quarantined, logged as a count per Data Source', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    await writeLines(path.join(dir, 'spool', 'app', 'a.ndjson'), ['{"ok":1}', 'not json', '{"ok":2}', '[1,2]', 'plain text']);
    const { logs, log } = captureLogs();
    const agent = await Agent.start(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }), { log, rescanMs: 50 });
    onCleanup(() => agent.close());
    await waitFor(() => (emu.stats().quarantined.app ?? 0) === 3, 'the emulator to quarantine 3 rows');
    const status = await waitFor(async () => {
      const s = (await (await fetch(`${agent.adminUrl}/status`)).json()) as StatusReport;
      return s.datasources[0]?.lines_acked === 5 ? s : null;
    }, 'all 5 lines acknowledged');
    expect(status.datasources[0]).toMatchObject({ datasource: 'app', rows_quarantined: 3 });
    const metrics = await (await fetch(`${agent.adminUrl}/metrics`)).text();
    expect(metrics).toContain('spoolship_rows_quarantined_total{datasource="app"} 3');
    const logged = logs.filter((l) => l.event === 'rows_quarantined');
    expect(logged.reduce((n, l) => n + (l.count as number), 0)).toBe(3);
    expect(logged.every((l) => l.datasource === 'app')).toBe(true);
  });
});
