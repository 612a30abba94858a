// SPEC section 7: secrets (the token, Redis passwords) are never logged. The
// real program is driven through the logging paths it can reach with them
// set (start, a Redis that cannot be reached, network errors and retries, a
// rejected token and its park, a changed token file, a SIGHUP reload, a fatal
// error), and none appears in stdout, stderr, /status, /metrics or the state
// files. (A proxy password and a client key join the list with those keys.)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { getJson, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const TOKEN = 'tok_SECRETgood0123456789abcdef';
const WRONG = 'tok_SECRETwrong9876543210fedcba';
const REDIS_PASSWORD = 'SECRETredisPassw0rd42';
const SECRETS = [TOKEN, WRONG, REDIS_PASSWORD];

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

const leaks = (where: string, text: string) => SECRETS.filter((s) => text.includes(s)).map((s) => `${where}: ${s.slice(0, 10)}...`);

describe('secrets (process)', () => {
  it('the token and the Redis password appear in no log line, answer, metric or state file on any path', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { tokens: [TOKEN] });
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const paths = await writeConfig(dir, t, {
      api: { token: null, token_file: tokenFile },
      limits: { redis_url: `redis://default:${REDIS_PASSWORD}@127.0.0.1:${await closedPort()}` },
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
    const status = JSON.stringify((await getJson(`${admin}/status`)).body);
    const metrics = String((await getJson(`${admin}/metrics`)).body);
    // A fatal error: the state_dir's lock removed.
    await rm(path.join(paths.stateDir, 'spoolship.lock'));
    expect((await agent.exited).code).toBe(1);
    const events = new Set(agent.logs.map((l) => l.event));
    for (const e of ['started', 'retrying', 'token_changed', 'parked', 'reload_requested', 'reload_unchanged', 'state_dir_lost']) expect(events, `the ${e} path was taken`).toContain(e);
    const found = [
      ...leaks('stdout', agent.stdout),
      ...leaks('stderr', agent.stderr),
      ...leaks('/status', status),
      ...leaks('/metrics', metrics),
      ...filesUnder(paths.stateDir).flatMap((f) => leaks(path.relative(dir, f.file), f.text)),
    ];
    expect(found, 'secrets found').toEqual([]);
  });
});
