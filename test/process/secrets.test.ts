// SPEC section 7: secrets (the token, Redis passwords) are never logged. The
// real program is driven through the logging paths it can reach with them
// set (start, a Redis that cannot be reached, network errors and retries, a
// rejected token and its park, a changed token file, a SIGHUP reload, a fatal
// error), and none appears in stdout, stderr, /status, /metrics or the state
// files. The same for a forward proxy's password (a proxy refusing a wrong
// one, then a right one after SIGHUP, check-config) and a client key's
// contents (read at start, rotated).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCa, makeClientCert } from '../support/pki.js';
import { startTinyproxy } from '../support/tinyproxy.js';
import { getJson, lines, onCleanup, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const TOKEN = 'tok_SECRETgood0123456789abcdef';
const WRONG = 'tok_SECRETwrong9876543210fedcba';
const REDIS_PASSWORD = 'SECRETredisPassw0rd42';
/** ioredis also reads a password from the URL's query. */
const REDIS_QUERY_PASSWORD = 'SECRETredisQueryPw43';
const SECRETS = [TOKEN, WRONG, REDIS_PASSWORD, REDIS_QUERY_PASSWORD];

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Every file under `dir`, as text. */
function filesUnder(dir: string): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) out.push(...filesUnder(p));
    else if (st?.isFile()) out.push({ file: p, text: readFileSync(p, 'latin1') });
  }
  return out;
}

const leaksOf = (secrets: string[]) => (where: string, text: string) => secrets.filter((s) => text.includes(s)).map((s) => `${where}: ${s.slice(0, 10)}...`);
const leaks = leaksOf(SECRETS);

const PROXY_PASSWORD = 'SECRETproxyPassw0rd77';
const WRONG_PROXY_PASSWORD = 'SECRETwrongProxyPw88';
const CLI = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'dist', 'cli.js');

/** A PEM key's secret part as it could leak: its base64 body whole, and each of its lines. */
function keyTexts(file: string): string[] {
  const body = readFileSync(file, 'utf8').split('\n').filter((l) => l && !l.startsWith('-----'));
  return [body.join(''), ...body.filter((l) => l.length >= 16)];
}

describe('secrets (process)', () => {
  it('the token and the Redis password appear in no log line, answer, metric or state file on any path', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { tokens: [TOKEN] });
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const paths = await writeConfig(dir, t, {
      api: { token: null, token_file: tokenFile },
      limits: { redis_url: `redis://default:${REDIS_PASSWORD}@127.0.0.1:${await closedPort()}/0?password=${REDIS_QUERY_PASSWORD}` },
    });
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    let written = 0;
    const write = async (n: number) => {
      await writeFile(file, lines('s', written, n), { flag: 'a' });
      written += n;
    };
    const delivered = (what: string) => waitForDelivery(t, 'ev', 's', written, what);
    await write(200);
    const agent = spawnAgent(paths.configFile);
    const admin = (await agent.started)!;
    await delivered('the first lines, on the fallback budget');
    // Network errors: every request reset, retried with a WARN.
    t.emu.setFaults([{ kind: 'reset', p: 1 }]);
    await write(100);
    await waitFor(() => agent.logs.some((l) => l.event === 'retrying'), 'a retry logged');
    t.emu.setFaults([]);
    await delivered('the lines after the resets');
    // A token the API rejects, read from the changed token file: parked.
    await writeFile(tokenFile, `${WRONG}\n`);
    await waitFor(() => agent.logs.some((l) => l.event === 'token_changed'), 'the token change noticed');
    await write(50);
    await waitFor(async () => ((await getJson(`${admin}/readyz`)).body as { reasons?: string[] }).reasons?.includes('token_rejected'), 'the park');
    // Fixed, and a SIGHUP reload.
    await writeFile(tokenFile, `${TOKEN}\n`);
    agent.child.kill('SIGHUP');
    await waitFor(() => agent.logs.some((l) => l.event === 'reload_unchanged'), 'the reload');
    await delivered('every line after the reload');
    // A 3xx whose Location echoes the token (a hostile or broken server): never
    // followed, parked, the Location logged without the token.
    t.emu.setFaults([{ kind: 'status', status: 302, location: `https://elsewhere.example/v0/events?name=ev&token=${TOKEN}`, p: 1 }]);
    await write(10);
    await waitFor(async () => ((await getJson(`${admin}/readyz`)).body as { reasons?: string[] }).reasons?.includes('unexpected_response'), 'the 3xx park');
    expect(agent.logs.some((l) => JSON.stringify(l).includes('elsewhere.example')), 'the Location is logged').toBe(true);
    const status = JSON.stringify((await getJson(`${admin}/status`)).body);
    const metrics = String((await getJson(`${admin}/metrics`)).body);
    // A fatal error: the state_dir's lock removed.
    await rm(path.join(paths.stateDir, 'spoolship.lock'));
    expect((await agent.exited).code).toBe(1);
    const events = new Set(agent.logs.map((l) => l.event));
    for (const e of ['started', 'retrying', 'token_changed', 'parked', 'reload_requested', 'reload_unchanged', 'state_dir_lost']) expect(events, `the ${e} path was taken`).toContain(e);
    expect(agent.logs.filter((l) => l.event === 'parked').map((l) => l.reason)).toContain('unexpected_response');
    const found = [
      ...leaks('stdout', agent.stdout),
      ...leaks('stderr', agent.stderr),
      ...leaks('/status', status),
      ...leaks('/metrics', metrics),
      ...filesUnder(paths.stateDir).flatMap((f) => leaks(path.relative(dir, f.file), f.text)),
    ];
    expect(found, 'secrets found').toEqual([]);
  });

  it('the proxy password and the client key appear in no log line, check-config output, answer, metric or state file', async () => {
    const dir = await tempDir();
    const pki = path.join(dir, 'pki');
    mkdirSync(pki);
    const ca = makeCa(pki, 'platform');
    const first = makeClientCert(pki, ca, 'first');
    const second = makeClientCert(pki, ca, 'second');
    const live = { certFile: path.join(pki, 'live.pem'), keyFile: path.join(pki, 'live.key') };
    const install = (pair: { certFile: string; keyFile: string }) => {
      for (const [from, to] of [[pair.keyFile, live.keyFile], [pair.certFile, live.certFile]] as const) {
        copyFileSync(from, `${to}.tmp`);
        renameSync(`${to}.tmp`, to);
      }
    };
    install(first);
    const t = await startEmu(dir, { tls: true, clientCaFile: ca.certFile });
    const proxy = await startTinyproxy(dir, { user: 'agent', password: PROXY_PASSWORD });
    onCleanup(() => proxy.close());
    const api = (password: string) => ({ ca_file: t.emu.caFile, client_cert_file: live.certFile, client_key_file: live.keyFile, proxy: proxy.url.replace(PROXY_PASSWORD, password) });
    const paths = await writeConfig(dir, t, { api: api(WRONG_PROXY_PASSWORD) });
    const secrets = [PROXY_PASSWORD, WRONG_PROXY_PASSWORD, ...keyTexts(first.keyFile), ...keyTexts(second.keyFile)];
    const leak = leaksOf(secrets);
    const checkConfig = execFileSync(process.execPath, [CLI, 'check-config', '-c', paths.configFile], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(checkConfig).toContain('agent:***@127.0.0.1');
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, lines('p', 0, 30));
    const agent = spawnAgent(paths.configFile);
    let admin = (await agent.started)!;
    // The proxy refuses the wrong password: retried, its cause shown, the data kept.
    const warn = (await waitFor(async () => agent.logs.find((l) => l.event === 'retrying'), 'the retry WARN'))!;
    expect(String(warn.cause)).toMatch(/PROXY_40[17]/);
    const refused = await waitFor(async () => {
      const s = (await getJson(`${admin}/status`)).body as { datasources: Array<{ datasource: string; last_error: string | null }> };
      return s.datasources.find((d) => d.datasource === 'ev')?.last_error?.includes('PROXY_') ? JSON.stringify(s) : null;
    }, 'the proxy refusal in status');
    // Fixed in the config: SIGHUP restarts the pipeline on it.
    await writeConfig(dir, t, { api: api(PROXY_PASSWORD) });
    agent.child.kill('SIGHUP');
    await waitFor(() => agent.logs.some((l) => l.event === 'reload_restarting'), 'the reload');
    // The restarted pipeline's admin server: a new port (admin.listen is port 0).
    admin = String((await waitFor(() => agent.logs.filter((l) => l.event === 'started')[1], 'the restart'))!.admin);
    await waitForDelivery(t, 'ev', 'p', 30, 'the lines through the proxy');
    expect(proxy.connects().length).toBeGreaterThan(0);
    // A rotated key.
    install(second);
    await waitFor(() => agent.logs.some((l) => l.event === 'client_cert_changed'), 'the rotation noticed');
    await writeFile(file, lines('p', 30, 20), { flag: 'a' });
    await waitForDelivery(t, 'ev', 'p', 50, 'the lines after the rotation');
    const status = JSON.stringify((await getJson(`${admin}/status`)).body);
    const metrics = String((await getJson(`${admin}/metrics`)).body);
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    const events = new Set(agent.logs.map((l) => l.event));
    for (const e of ['started', 'proxy', 'retrying', 'reload_restarting', 'client_cert_changed']) expect(events, `the ${e} path was taken`).toContain(e);
    const found = [
      ...leak('check-config', checkConfig),
      ...leak('stdout', agent.stdout),
      ...leak('stderr', agent.stderr),
      ...leak('/status while refused', String(refused)),
      ...leak('/status', status),
      ...leak('/metrics', metrics),
      ...filesUnder(paths.stateDir).flatMap((f) => leak(path.relative(dir, f.file), f.text)),
    ];
    expect(found, 'secrets found').toEqual([]);
  });
});
