// Mutual TLS against an emulator that requires client certificates of its CA
// (--client-ca): what the operator sees when the certificate is missing,
// from another CA, or rotated (the cause in the retry WARN and in status's
// last error), and that nothing is lost: once fixed (a SIGHUP with the new
// config, or the files replaced), every line arrives exactly once.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/report/report.js';
import { makeCa, makeClientCert, type ClientPair } from '../support/pki.js';
import { checkDelivery, getJson, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig, type AgentProcess, type TestEmu } from './helpers.js';

// What the operator must see (src/net/tls-failure.ts): no certificate, the
// server's TLS 1.3 alert by name; another CA's (the emulator, as Node's TLS
// servers do, closes without an alert), that the certificate was likely refused.
const MISSING = /ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED/;
const WRONG = /refused the client certificate|UNKNOWN_CA/;

async function lastError(admin: string, ds: string): Promise<string | null> {
  const s = (await getJson(`${admin}/status`)).body as StatusReport;
  return s.datasources.find((d) => d.datasource === ds)?.last_error ?? null;
}

async function setup() {
  const dir = await tempDir();
  const pki = path.join(dir, 'pki');
  mkdirSync(pki);
  const ca = makeCa(pki, 'platform');
  const other = makeCa(pki, 'other');
  const t = await startEmu(dir, { tls: true, clientCaFile: ca.certFile });
  return { dir, pki, ca, other, t };
}

/** Replace the pair at `live` with `next` the way a secret update does: write beside, rename over. */
function install(next: ClientPair, live: ClientPair): void {
  for (const [from, to] of [[next.keyFile, live.keyFile], [next.certFile, live.certFile]] as const) {
    copyFileSync(from, `${to}.tmp`);
    renameSync(`${to}.tmp`, to);
  }
}

async function refusedVisibly(p: AgentProcess, admin: string, ds: string, since: number, cause: RegExp): Promise<void> {
  const warn = (await waitFor(async () => p.logs.slice(since).find((l) => l.event === 'retrying'), 'the retry WARN'))!;
  expect(warn.reason).toBe('network');
  expect(String(warn.cause)).toMatch(cause);
  const err = await waitFor(async () => {
    const e = await lastError(admin, ds);
    return e && cause.test(e) ? e : null;
  }, 'the handshake refusal as the last error in status');
  expect(err).toMatch(cause);
}

async function allOnce(t: TestEmu, ds: string, prefix: string, count: number): Promise<void> {
  // Fails at once on a duplicate or a row that is not one of the lines.
  await waitForDelivery(t, ds, prefix, count, `every ${prefix} line delivered once`);
}

const CLI = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'dist', 'cli.js');

function cli(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('mutual TLS (process)', () => {
  it('missing: no client certificate configured is a refused handshake, retried; the config fixed by SIGHUP delivers every line once', async () => {
    const { dir, pki, ca, t } = await setup();
    const good = makeClientCert(pki, ca, 'agent');
    const cfg = await writeConfig(dir, t, { api: { ca_file: t.emu.caFile } });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('m', 0, 40));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await refusedVisibly(p, admin, 'ev', 0, MISSING);
    expect((await checkDelivery(t, 'ev', 'm', 40)).rows).toBe(0);
    await writeConfig(dir, t, { api: { ca_file: t.emu.caFile, client_cert_file: good.certFile, client_key_file: good.keyFile } });
    p.child.kill('SIGHUP');
    await waitFor(() => p.logs.some((l) => l.event === 'reload_restarting'), 'the reload on the new config');
    await allOnce(t, 'ev', 'm', 40);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('wrong: a certificate of another CA is refused, retried; the files replaced (no signal) deliver every line once', async () => {
    const { dir, pki, ca, other, t } = await setup();
    const live = makeClientCert(pki, other, 'live');
    const good = makeClientCert(pki, ca, 'agent');
    const cfg = await writeConfig(dir, t, { api: { ca_file: t.emu.caFile, client_cert_file: live.certFile, client_key_file: live.keyFile } });
    mkdirSync(path.join(cfg.spoolDir, 'ev'), { recursive: true });
    writeFileSync(path.join(cfg.spoolDir, 'ev', 'a.ndjson'), lines('w', 0, 40));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await refusedVisibly(p, admin, 'ev', 0, WRONG);
    install(good, live);
    await waitFor(() => p.logs.some((l) => l.event === 'client_cert_changed'), 'the changed files noticed');
    await allOnce(t, 'ev', 'w', 40);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('rotated: each new pair is used by the next connections at once, a bad one visibly, a good one again; nothing lost', async () => {
    const { dir, pki, ca, other, t } = await setup();
    const live = makeClientCert(pki, ca, 'live');
    const cfg = await writeConfig(dir, t, { api: { ca_file: t.emu.caFile, client_cert_file: live.certFile, client_key_file: live.keyFile } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, lines('r', 0, 20));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    await allOnce(t, 'ev', 'r', 20);
    // A rotation to a certificate the server does not accept: the kept-alive connection is not reused.
    install(makeClientCert(pki, other, 'stranger'), live);
    await waitFor(() => p.logs.some((l) => l.event === 'client_cert_changed'), 'the first rotation noticed');
    const since = p.logs.length;
    writeFileSync(file, lines('r', 20, 20), { flag: 'a' });
    await refusedVisibly(p, admin, 'ev', since, WRONG);
    // The next rotation, to a certificate of the platform's CA: shipping resumes.
    install(makeClientCert(pki, ca, 'renewed'), live);
    await waitFor(() => p.logs.filter((l) => l.event === 'client_cert_changed').length === 2, 'the second rotation noticed');
    writeFileSync(file, lines('r', 40, 20), { flag: 'a' });
    await allOnce(t, 'ev', 'r', 60);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('a client certificate file that cannot be read, or a key of another certificate, refuses the start (exit 2) naming the file', async () => {
    const { dir, pki, ca, t } = await setup();
    const a = makeClientCert(pki, ca, 'a');
    const b = makeClientCert(pki, ca, 'b');
    for (const [cert, key] of [[path.join(pki, 'absent.pem'), a.keyFile], [a.certFile, b.keyFile]]) {
      const cfg = await writeConfig(dir, t, { api: { ca_file: t.emu.caFile, client_cert_file: cert, client_key_file: key } });
      const p = spawnAgent(cfg.configFile);
      expect((await p.exited).code).toBe(2);
      expect(p.stderr).toContain('api.client_cert_file');
    }
  });

  it('clusters: api.ca_file and the client certificate of -c are used (they were not: a self-signed or client-certificate host could not be reached)', async () => {
    const { dir, pki, ca, other, t } = await setup();
    const good = makeClientCert(pki, ca, 'ops');
    const foreign = makeClientCert(pki, other, 'stranger');
    const args = (cfg: string) => ['clusters', 'list', '-c', cfg, '--org', t.emu.org, '--token', t.emu.adminToken, '--json'];
    const ok = await writeConfig(dir, t, { api: { ca_file: t.emu.caFile, client_cert_file: good.certFile, client_key_file: good.keyFile } });
    const listed = await cli(args(ok.configFile), dir);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.length).toBeGreaterThan(0);
    // Another CA's certificate: the emulator refuses the handshake.
    mkdirSync(path.join(dir, 'other'));
    const refused = await writeConfig(path.join(dir, 'other'), t, { api: { ca_file: t.emu.caFile, client_cert_file: foreign.certFile, client_key_file: foreign.keyFile } });
    const failed = await cli(args(refused.configFile), dir);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/no answer/);
  });

  it('every file that cannot be read is named at once (the start listed only the first)', async () => {
    const { dir, pki, ca, t } = await setup();
    const a = makeClientCert(pki, ca, 'a');
    const absent = (name: string) => path.join(pki, name);
    const cfg = await writeConfig(dir, t, {
      api: { ca_file: absent('ca.pem'), client_cert_file: absent('client.pem'), client_key_file: a.keyFile },
      limits: { redis_url: 'rediss://127.0.0.1:1', redis_ca_file: absent('redis-ca.pem') },
    });
    const p = spawnAgent(cfg.configFile);
    expect((await p.exited).code).toBe(2);
    expect(p.stderr).toContain('(3 problems)');
    for (const key of ['api.ca_file', 'api.client_cert_file', 'limits.redis_ca_file']) expect(p.stderr).toContain(key);
  });
});
