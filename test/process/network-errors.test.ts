// Network failures keep their cause: the WARN that starts a retry streak and
// the per-Data-Source last error of /status name the error code (a refused
// connection, a certificate error by name) and where the API is.
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/report/report.js';
import { lines, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function lastError(admin: string, ds: string): Promise<string | null> {
  const s = (await (await fetch(`${admin}/status`)).json()) as StatusReport;
  return s.datasources.find((d) => d.datasource === ds)?.last_error ?? null;
}

describe('network failures keep their cause', () => {
  it('a refused connection: ECONNREFUSED and the address in the retry WARN and in status', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const port = await closedPort();
    const cfg = await writeConfig(dir, t, { api: { base_url: `http://127.0.0.1:${port}` } });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('n', 0, 5));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const warn = (await waitFor(async () => p.logs.find((l) => l.event === 'retrying'), 'the retry WARN'))!;
    expect(warn.reason).toBe('network');
    expect(String(warn.cause)).toContain('ECONNREFUSED');
    expect(String(warn.api)).toBe(`http://127.0.0.1:${port}`);
    expect(String(warn.msg)).toContain('ECONNREFUSED');
    const err = await waitFor(async () => lastError(admin, 'ev'), 'a last error in status');
    expect(err).toContain('ECONNREFUSED');
    expect(err).toContain(`127.0.0.1:${port}`);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('a certificate the agent does not trust: the certificate error by name', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { tls: true });
    const cfg = await writeConfig(dir, t);
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('c', 0, 5));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const warn = (await waitFor(async () => p.logs.find((l) => l.event === 'retrying'), 'the retry WARN'))!;
    expect(String(warn.cause)).toMatch(/SELF_SIGNED|CERT|UNABLE_TO_VERIFY/);
    const err = await waitFor(async () => lastError(admin, 'ev'), 'a last error in status');
    expect(err).toMatch(/SELF_SIGNED|CERT|UNABLE_TO_VERIFY/);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });
});
