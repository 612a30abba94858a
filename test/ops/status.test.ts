// `spoolship status` as a child process: from a running agent's /status, and
// from the state_dir when the agent is down or has no admin endpoint.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/report/report.js';
import { configFor, gauge, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines } from '../pipeline/helpers.js';
import { CLI, listenOf, runCli, startCli, writeConfig } from './helpers.js';

async function statusJson(cfg: string, cwd: string): Promise<StatusReport> {
  const r = await runCli(['status', '--json', '-c', cfg], cwd);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as StatusReport;
}

async function fetchStatus(adminUrl: string): Promise<StatusReport> {
  return (await (await fetch(`${adminUrl}/status`)).json()) as StatusReport;
}

/** Name, size and mtime of every file under the state dir. */
function snapshot(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((n) => {
      const st = statSync(path.join(dir, n));
      return `${n}:${st.size}:${st.mtimeMs}`;
    })
    .sort();
}

describe('status from the running agent', () => {
  it('prints the same JSON as /status: lines read/acked per Data Source, bytes per file; and a table', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const appFile = path.join(dir, 'spool', 'app', 'a.ndjson');
    const webFile = path.join(dir, 'spool', 'web', 'w.ndjson');
    await writeLines(appFile, Array.from({ length: 50 }, (_, i) => JSON.stringify({ app: i })));
    await writeLines(webFile, Array.from({ length: 10 }, (_, i) => JSON.stringify({ web: i })));
    const { agent } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }));
    const adminUrl = agent.adminUrl!;
    await waitFor(async () => {
      const s = await fetchStatus(adminUrl);
      return s.datasources.length === 2 && s.datasources.every((d) => d.lines_acked === d.lines_read && d.bytes_behind === 0 && d.bytes_committed > 0);
    }, 'everything acknowledged');
    expect(rows(emu, dir, 'app')).toHaveLength(50);
    const cfg = await writeConfig(dir, emu, { admin: { listen: listenOf(adminUrl) } });

    const report = await statusJson(cfg, dir);
    const direct = await fetchStatus(adminUrl);
    expect({ ...report, generated_at: '' }).toEqual({ ...direct, generated_at: '' });
    expect(report).toMatchObject({
      version: 3,
      source: 'agent',
      state_dir: path.join(dir, 'state'),
      agent: { running: true, pid: process.pid, admin_url: adminUrl, admin_error: null, ready: true, reasons: [] },
      queue: { batches: 0, bytes: 0 },
      batches_active: 0,
      in_flight: 0,
    });
    const appSize = statSync(appFile).size;
    const webSize = statSync(webFile).size;
    expect(report.datasources).toEqual([
      {
        datasource: 'app',
        lines_read: 50,
        lines_acked: 50,
        rows_quarantined: 0,
        lines_dead_lettered: 0,
        bytes_read: appSize,
        bytes_committed: appSize,
        bytes_queued: 0,
        bytes_behind: 0,
        last_error: null,
        parked: null,
        queue: { batches: 0, bytes: 0 },
        files: [{ path: appFile, size: appSize, read: appSize, committed: appSize, queued: 0, behind: 0 }],
      },
      {
        datasource: 'web',
        lines_read: 10,
        lines_acked: 10,
        rows_quarantined: 0,
        lines_dead_lettered: 0,
        bytes_read: webSize,
        bytes_committed: webSize,
        bytes_queued: 0,
        bytes_behind: 0,
        last_error: null,
        parked: null,
        queue: { batches: 0, bytes: 0 },
        files: [{ path: webFile, size: webSize, read: webSize, committed: webSize, queued: 0, behind: 0 }],
      },
    ]);

    const table = await runCli(['status', '-c', cfg], dir);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(`source: running agent (pid ${process.pid}) at ${adminUrl}/status; ready`);
    expect(table.stdout).toMatch(/DATASOURCE\s+LINES READ\s+LINES ACKED\s+DEAD LETTERS\s+READ\s+COMMITTED\s+QUEUED\s+BEHIND\s+BATCHES QUEUED\s+LAST ERROR\s+PARKED/);
    expect(table.stdout).toMatch(/\napp\s+50\s+50\s/);
    expect(table.stdout).toContain(appFile);
  });

  it('a file renamed out of the patterns (logrotate x.ndjson.1) and still written to stays in the report at its new name, read to its end', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'app', 'x.ndjson');
    const rotated = `${file}.1`;
    const first = Array.from({ length: 20 }, (_, i) => JSON.stringify({ app: i }));
    const late = Array.from({ length: 10 }, (_, i) => JSON.stringify({ late: i }));
    await writeLines(file, first);
    // idle_ms long: the renamed file is still being read when the report is taken.
    const { agent } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' }, spool: { dir: path.join(dir, 'spool'), idle_ms: 600_000 } }));
    await waitForRows(emu, dir, 'app', first, 'the lines before the rename');
    const { rename } = await import('node:fs/promises');
    await rename(file, rotated);
    appendFileSync(rotated, late.map((l) => `${l}\n`).join(''));
    await waitForRows(emu, dir, 'app', [...first, ...late], 'the late writer\'s lines');
    const size = statSync(rotated).size;
    await waitFor(async () => (await fetchStatus(agent.adminUrl!)).datasources[0]?.bytes_committed === size, 'the renamed file committed to its end');
    const app = (await fetchStatus(agent.adminUrl!)).datasources.find((d) => d.datasource === 'app')!;
    expect(app).toMatchObject({ lines_read: 30, lines_acked: 30, bytes_read: size, bytes_committed: size, bytes_behind: 0 });
    expect(app.files).toEqual([{ path: rotated, size, read: size, committed: size, queued: 0, behind: 0 }]);
  });

  it('shows the parked reason and the last error when the token is rejected', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    await writeLines(path.join(dir, 'spool', 'app', 'a.ndjson'), ['{"a":1}']);
    const { agent } = await startAgent(configFor(dir, emu, { api: { token: 'revoked' }, admin: { listen: '127.0.0.1:0' } }));
    const s = await waitFor(async () => {
      const r = await fetchStatus(agent.adminUrl!);
      return r.datasources[0]?.parked ? r : null;
    }, 'parked');
    // no_progress may join it on a slow machine (a backlog, no ack for 10 linger periods).
    expect(s!.agent).toMatchObject({ ready: false, reasons: expect.arrayContaining(['token_rejected']) });
    expect(s!.datasources[0]).toMatchObject({ datasource: 'app', parked: 'token_rejected', last_error: 'HTTP 403', lines_read: 1, lines_acked: 0 });
    // The batch waits in memory, then in the disk retry queue; its bytes show
    // as queued, not committed (nothing was acknowledged), once it is queued
    // durably (the queue record first, then the journal); and as behind, as
    // spoolship_behind_bytes counts them (an outage shows as growth).
    const queued = await waitFor(async () => {
      const r = await fetchStatus(agent.adminUrl!);
      return r.queue.batches === 1 && r.datasources[0]?.bytes_queued === 8 ? r : null;
    }, 'the parked batch in the disk queue');
    expect(queued!.datasources[0]).toMatchObject({ bytes_committed: 0, bytes_queued: 8, bytes_behind: 8, parked: 'token_rejected' });
    expect(await gauge(agent, 'spoolship_behind_bytes', '{datasource="app"}')).toBe(8);
  });
});

describe('status from the state dir', () => {
  it('when the agent is down: committed from checkpoint + journal, behind from the file size; reads only', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'app', 'a.ndjson');
    const lines = Array.from({ length: 20 }, (_, i) => JSON.stringify({ i }));
    await writeLines(file, lines);
    const { stop } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }));
    await waitForRows(emu, dir, 'app', lines, 'rows');
    await stop();
    const committed = statSync(file).size;
    await writeLines(file, ['{"late":1}', '{"late":2}']);
    const state = path.join(dir, 'state');
    // A half-written record at the end of the newest journal (a crash mid-write): ignored, not cut.
    const journal = readdirSync(state).filter((n) => n.startsWith('journal-')).sort().pop()!;
    appendFileSync(path.join(state, journal), Buffer.from([0x20, 0, 0, 0, 1, 2]));
    const before = snapshot(state);
    const cfg = await writeConfig(dir, emu, { admin: { listen: '127.0.0.1:1' } });

    const report = await statusJson(cfg, dir);
    expect(report).toMatchObject({
      version: 3,
      source: 'state_dir',
      state_dir: state,
      agent: { running: false, pid: null, api: null, ready: null },
      queue: { batches: 0, bytes: 0 },
      batches_active: 0,
      in_flight: null,
    });
    expect(report.agent.admin_error).toMatch(/no answer from http:\/\/127\.0\.0\.1:1\/status/);
    const size = statSync(file).size;
    expect(report.datasources).toEqual([
      {
        datasource: 'app',
        lines_read: null,
        lines_acked: null,
        rows_quarantined: null,
        lines_dead_lettered: null,
        bytes_read: committed,
        bytes_committed: committed,
        bytes_queued: 0,
        bytes_behind: size - committed,
        last_error: null,
        parked: null,
        queue: { batches: 0, bytes: 0 },
        files: [{ path: file, size, read: committed, committed, queued: 0, behind: size - committed }],
      },
    ]);
    const table = await runCli(['status', '-c', cfg], dir);
    expect(table.stdout).toContain(`source: state_dir ${state}, read from disk; agent not running`);
    expect(table.stdout).toMatch(/\napp\s+-\s+-\s/);
    expect(snapshot(state)).toEqual(before);
  });

  it.each([
    ['disabled', ''],
    ['on port 0 (its address known only to the agent)', '127.0.0.1:0'],
  ])("while the agent runs with admin.listen %s: the agent's own report, through the control socket in state_dir", async (_what, listen) => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const file = path.join(dir, 'spool', 'app', 'a.ndjson');
    await writeLines(file, Array.from({ length: 30 }, (_, i) => JSON.stringify({ i })));
    await startAgent(configFor(dir, emu, { admin: { listen } }));
    const cfg = await writeConfig(dir, emu, { admin: { listen } });
    const size = statSync(file).size;
    const report = await waitFor(async () => {
      const r = await statusJson(cfg, dir);
      return r.datasources[0]?.lines_acked === 30 ? r : null;
    }, 'every line acknowledged, as the agent counts them');
    expect(report!.source).toBe('agent');
    expect(report!.agent).toMatchObject({ running: true, pid: process.pid, ready: true });
    expect(report!.datasources[0]).toMatchObject({ datasource: 'app', lines_read: 30, lines_acked: 30, bytes_behind: 0, files: [{ path: file, size, committed: size }] });
    const table = await runCli(['status', '-c', cfg], dir);
    // Said as it came: through the socket, not from the admin endpoint the agent has (an audit: the port-0 case named that endpoint as the source).
    expect(table.stdout).toContain(listen === '' ? `source: running agent (pid ${process.pid}) through its control socket; ready` : `source: running agent (pid ${process.pid}) through its control socket (its admin endpoint: http://127.0.0.1:`);
  });

  it('after kill -9 with a request unanswered: the journal intent shows as a batch to resend, read but not committed', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'hang', every: 1 }] });
    const file = path.join(dir, 'spool', 'app', 'a.ndjson');
    await writeLines(file, Array.from({ length: 10 }, (_, i) => JSON.stringify({ i })));
    const cfg = await writeConfig(dir, emu);
    const run = startCli(['run', '-c', cfg], dir);
    // (Before the agent makes its state_dir, status says that it does not exist.)
    await waitFor(() => existsSync(path.join(dir, 'state')), 'the state dir');
    // The intent is fsync'd before the request is sent: the state dir shows it while the agent runs.
    const during = await waitFor(async () => {
      const r = await statusJson(cfg, dir);
      return r.batches_active === 1 ? r : null;
    }, 'the intent in the journal');
    expect(during!.agent).toMatchObject({ running: true, pid: run.child.pid });
    run.child.kill('SIGKILL');
    await run.done;
    const size = statSync(file).size;
    const report = await statusJson(cfg, dir);
    expect(report.agent).toMatchObject({ running: false, pid: null });
    expect(report.batches_active).toBe(1);
    expect(report.queue).toEqual({ batches: 0, bytes: 0 });
    expect(report.datasources[0]).toMatchObject({ bytes_read: size, bytes_committed: 0, bytes_behind: size });
  });

  it('batches in the disk retry queue are counted from its files, in all and per Data Source; their bytes are queued, not committed (not acknowledged)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'status', status: 503, datasource: 'app', every: 1 }] });
    const file = path.join(dir, 'spool', 'app', 'a.ndjson');
    await writeLines(file, Array.from({ length: 10 }, (_, i) => JSON.stringify({ i })));
    await writeLines(path.join(dir, 'spool', 'web', 'w.ndjson'), [JSON.stringify({ w: 1 })]);
    const { agent, stop } = await startAgent(configFor(dir, emu, { shutdown_timeout_ms: 200, admin: { listen: '127.0.0.1:0' } }));
    const live = await waitFor(async () => {
      const r = await fetchStatus(agent.adminUrl!);
      return r.queue.batches === 1 && r.datasources.find((d) => d.datasource === 'web')?.lines_acked === 1 ? r : null;
    }, 'the batch in the disk queue');
    const byDs = (r: StatusReport) => Object.fromEntries(r.datasources.map((d) => [d.datasource, d.queue]));
    expect(byDs(live!)).toEqual({ app: live!.queue, web: { batches: 0, bytes: 0 } });
    const size = statSync(file).size;
    // Read, durably queued, not yet acknowledged: committed is 0, the file's bytes show as queued, and all of them as behind.
    const queuedApp = { datasource: 'app', lines_acked: 0, lines_dead_lettered: 0, bytes_read: size, bytes_committed: 0, bytes_queued: size, bytes_behind: size, files: [{ path: file, size, read: size, committed: 0, queued: size, behind: size }] };
    expect(live!.datasources[0]).toMatchObject(queuedApp);
    const table = await runCli(['status', '-c', await writeConfig(dir, emu, { admin: { listen: listenOf(agent.adminUrl!) } })], dir);
    expect(table.stdout).toMatch(new RegExp(`\\napp\\s+10\\s+0\\s+0\\s+${size} B\\s+0 B\\s+${size} B\\s+${size} B\\s+1\\s`));
    await stop();
    const report = await statusJson(await writeConfig(dir, emu), dir);
    expect(report.queue).toEqual(live!.queue);
    expect(report.queue.bytes).toBeGreaterThan(0);
    expect(byDs(report)).toEqual(byDs(live!));
    expect(report.batches_active).toBe(0);
    expect(report.datasources[0]).toMatchObject({ ...queuedApp, lines_acked: null, lines_dead_lettered: null });
  });

  it('a dead-letter column explains lines read but not acknowledged (read 201 / acked 200 / dead letters 1)', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { faults: [{ kind: 'reject_marker', marker: 'POISON' }] });
    const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i }));
    lines.splice(150, 0, '{"id":"POISON"}');
    await writeLines(path.join(dir, 'spool', 'app', 'a.ndjson'), lines);
    const { agent } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }));
    const report = await waitFor(async () => {
      const r = await fetchStatus(agent.adminUrl!);
      return r.datasources[0]?.lines_acked === 200 && r.datasources[0]?.bytes_behind === 0 ? r : null;
    }, 'every good line acknowledged and the bad one dead-lettered');
    expect(report!.datasources[0]).toMatchObject({ datasource: 'app', lines_read: 201, lines_acked: 200, lines_dead_lettered: 1, bytes_queued: 0 });
    const table = await runCli(['status', '-c', await writeConfig(dir, emu, { admin: { listen: listenOf(agent.adminUrl!) } })], dir);
    expect(table.stdout).toMatch(/DATASOURCE\s+LINES READ\s+LINES ACKED\s+DEAD LETTERS\s+READ\s+COMMITTED\s+QUEUED\s+BEHIND\s+BATCHES QUEUED\s+LAST ERROR\s+PARKED/);
    expect(table.stdout).toMatch(/\napp\s+201\s+200\s+1\s/);
  });

  it('exit 1 naming the state dir when no checkpoint is readable; an agent serving another state dir is not used', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const { agent } = await startAgent(configFor(dir, emu, { admin: { listen: '127.0.0.1:0' } }));
    const other = path.join(dir, 'other-state');
    await writeLines(path.join(other, 'checkpoint.json'), ['{not json']);
    const cfg = await writeConfig(dir, emu, { state_dir: other, admin: { listen: listenOf(agent.adminUrl!) } });
    const r = await runCli(['status', '--json', '-c', cfg], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no readable checkpoint in ${other}`);
    await writeLines(path.join(other, 'checkpoint.json.prev'), ['{"version":1,"journal_seq":0,"prev_journal_seq":0,"next_id":1,"files":[],"intents":[]}']);
    const report = await statusJson(cfg, dir);
    expect(report.source).toBe('state_dir');
    expect(report.agent.admin_error).toBe(`the agent at ${agent.adminUrl} serves state_dir ${path.join(dir, 'state')}, not this config's; no agent listens on the control socket`);
  });

  it('--watch repeats the report on a pipe and stops on SIGINT with exit 0', async () => {
    const dir = await tempDir();
    const cfg = await writeConfig(dir, null);
    const cli = startCli(['status', '--watch', '--json', '-c', cfg], dir);
    await waitFor(() => cli.stdout().split('\n').filter(Boolean).length >= 2, 'two reports');
    cli.child.kill('SIGINT');
    const r = await cli.done;
    expect(r.code).toBe(0);
    const reports = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as StatusReport);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    for (const s of reports) expect(s).toMatchObject({ version: 3, source: 'state_dir', datasources: [] });

    const plain = startCli(['status', '--watch', '-c', cfg], dir);
    await waitFor(() => plain.stdout().split('spoolship status at').length >= 3, 'two plain reports');
    plain.child.kill('SIGINT');
    const p = await plain.done;
    expect(p.code).toBe(0);
    expect(p.stdout).not.toContain('\x1b[2J'); // no screen clearing on a pipe
    expect(p.stdout).toContain('no Data Sources yet');
  });

  it('--watch stops quietly with exit 0 when its reader goes away (status --watch | head -1)', async () => {
    const dir = await tempDir();
    const cfg = await writeConfig(dir, null);
    await mkdir(path.join(dir, 'state'));
    const cli = startCli(['status', '--watch', '--json', '-c', cfg], dir);
    await waitFor(() => cli.stdout().includes('\n'), 'the first report');
    // The reader closes its end of the pipe; the next report's write fails with EPIPE.
    cli.child.stdout!.destroy();
    const r = await cli.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
  });

  it('--watch on a terminal clears and redraws in place; Ctrl-C stops it with exit 0', async () => {
    const dir = await tempDir();
    const cfg = await writeConfig(dir, null);
    // util-linux `script` gives the CLI a pseudo-terminal; \x03 on it is a real Ctrl-C.
    const child = spawn('script', ['-qec', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} status --watch -c ${JSON.stringify(cfg)}`, '/dev/null'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', TERM: 'xterm' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await waitFor(() => out.split('\x1b[H\x1b[2J').length >= 3, 'two redraws');
    child.stdin.write('\x03');
    expect(await done).toBe(0);
    expect(out).toContain('source: state_dir');
  });
});

describe('commands that never use the token', () => {
  it('status, queue list and dead-letter list need no token (nor any API, Redis or clusters variable) and print no warning that concerns run', async () => {
    const dir = await tempDir();
    const cfg = path.join(dir, 'c.yaml');
    // SPOOLSHIP_TOKEN is not set for the child; max_line_bytes over batch.max_bytes is a warning for run only.
    await writeFile(cfg, `api:\n  base_url: \${API_BASE_URL}\n  proxy: \${PROXY_URL}\n  token: \${SPOOLSHIP_TOKEN}\nlimits:\n  redis_url: \${REDIS_URL}\nclusters:\n  org: \${ORG}\nspool:\n  dir: ${path.join(dir, 'spool')}\nstate_dir: ${path.join(dir, 'state')}\nbatch:\n  max_bytes: 5KB\nadmin:\n  listen: ""\n`);
    await mkdir(path.join(dir, 'spool'), { recursive: true });
    await mkdir(path.join(dir, 'state'));
    for (const args of [['status'], ['queue', 'list'], ['dead-letter', 'list']]) {
      const r = await runCli([...args, '-c', cfg], dir);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
    const replay = await runCli(['dead-letter', 'replay', '-c', cfg], dir);
    expect(replay.code).toBe(2);
    expect(replay.stderr).toContain('SPOOLSHIP_TOKEN is not set');
  });

  it('send and clusters need no variable of a key they do not use, and warn about a SPOOLSHIP_* variable that names no key', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const cfg = path.join(dir, 'c.yaml');
    // send uses api.*, not clusters.*; clusters uses clusters.* and api.base_url, not api.token.
    await writeFile(cfg, `api:\n  base_url: ${emu.url}\n  token: \${EVENTS_TOKEN}\nclusters:\n  org: acme\n  token: \${ADMIN_TOKEN}\nstate_dir: ${path.join(dir, 'state')}\nadmin:\n  listen: ""\n`);
    const input = path.join(dir, 'in.ndjson');
    await writeFile(input, '{"a":1}\n');
    const send = await runCli(['send', '-c', cfg, '-d', 'ev', input], dir, { EVENTS_TOKEN: emu.token, SPOOLSHIP_BATCH_LINGER_MS: '5' });
    expect(send.code).toBe(0);
    expect(send.stderr.split('\n')[0]).toBe('spoolship send: warning: SPOOLSHIP_BATCH_LINGER_MS names no config key; it is ignored. Did you mean SPOOLSHIP_BATCH__LINGER_MS?');
    expect(rows(emu, dir, 'ev')).toEqual(['{"a":1}']);
    // The emulator here has no cluster API org "acme": what matters is that the config was accepted (no exit 2 naming EVENTS_TOKEN).
    const clusters = await runCli(['clusters', 'list', '-c', cfg, '--timeout-ms', '5000'], dir, { ADMIN_TOKEN: 'admin', SPOOLSHIP_BATCH_LINGER_MS: '5' });
    expect(clusters.stderr).not.toContain('EVENTS_TOKEN');
    expect(clusters.stderr).toContain('spoolship clusters: warning: SPOOLSHIP_BATCH_LINGER_MS names no config key');
    expect(clusters.code).not.toBe(2);
  });

  it('status, queue and dead-letter list warn about a SPOOLSHIP_* variable that names no key (a misspelt state dir must not pass unseen)', async () => {
    const dir = await tempDir();
    const cfg = await writeConfig(dir, null);
    await mkdir(path.join(dir, 'state'));
    for (const args of [['status'], ['queue', 'list'], ['dead-letter', 'list']]) {
      const r = await runCli([...args, '-c', cfg], dir, { SPOOLSHIP_STATEDIR: '/elsewhere' });
      expect(r.code).toBe(0);
      expect(r.stderr).toBe(`spoolship ${args[0]}: warning: SPOOLSHIP_STATEDIR names no config key; it is ignored. Did you mean SPOOLSHIP_STATE_DIR?\n`);
    }
  });
});

describe('status shows names as text', () => {
  it('escapes control characters (ESC, BEL, CR, LF) of file and directory names, as logs and dead-letter list do', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir);
    const hostile = path.join(dir, 'spool', 'app', 'x\u001b[2J\u0007\r\nfake.ndjson');
    await writeLines(hostile, ['{"a":1}']);
    await mkdir(path.join(dir, 'spool', 'bad\u001b[31mdir'), { recursive: true });
    const { stop } = await startAgent(configFor(dir, emu, { admin: { listen: '' } }));
    await waitForRows(emu, dir, 'app', ['{"a":1}'], 'the line');
    await stop();
    const cfg = await writeConfig(dir, emu, { admin: { listen: '' } });
    const r = await runCli(['status', '-c', cfg], dir);
    expect(r.code).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(r.stdout.match(/[\u0000-\u0008\u000b-\u001f\u007f]/g), 'raw control characters in the table').toBeNull();
    expect(r.stdout).toContain('x\\u001b[2J\\u0007\\r\\nfake.ndjson');
    expect(r.stdout).toContain('bad\\u001b[31mdir');
  });
});
