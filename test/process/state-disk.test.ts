// The state_dir fills up, then becomes read-only, while the agent runs:
// /readyz answers 503 with the reason (disk_full, state_dir_unwritable), the
// metrics say it, the agent stops advancing, and it resumes by itself when
// the cause goes away; nothing is lost.
//
// Needs mount(2): tests run as root on Linux (CI too). When mounting is not
// permitted the tests fail saying so; they never pass without having run.
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, renameSync, rmSync, writeSync, rmdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkDelivery,
  getJson,
  LINE_BYTES,
  lines,
  metric,
  onCleanup,
  spawnAgent,
  startEmu,
  tempDir,
  waitFor,
  waitForDelivery,
  writeConfig,
  type AgentProcess,
  type TestEmu,
} from './helpers.js';

let mountProblem: string | null = null;

function sh(cmd: string, args: string[]): void {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function unmount(dir: string): void {
  try {
    sh('umount', [dir]);
  } catch {
    sh('umount', ['-l', dir]);
  }
}

beforeAll(() => {
  // Checked once: can this process mount a tmpfs and remount a bind mount read-only?
  const probe = mkdtempSync(path.join(os.tmpdir(), 'spoolship-mount-probe-'));
  try {
    sh('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]);
    try {
      sh('mount', ['--bind', probe, probe]);
      sh('mount', ['-o', 'remount,ro,bind', probe]);
      unmount(probe);
    } finally {
      unmount(probe);
    }
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    mountProblem = `cannot run: mounting a tmpfs / read-only bind mount failed (${(e.stderr?.toString() || e.message).trim()}); these tests need root (CAP_SYS_ADMIN) on Linux`;
  } finally {
    rmdirSync(probe);
  }
});

function requireMount(): void {
  if (mountProblem) throw new Error(mountProblem);
}

/** A small tmpfs for the state_dir, unmounted after the test (after the agent is gone). */
function mountTmpfs(dir: string, sizeBytes: number): void {
  mkdirSync(dir, { recursive: true });
  sh('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir]);
  onCleanup(async () => unmount(dir));
}

/** Write a filler file until the file system is full; returns its size. */
function fill(file: string): number {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  let n = 0;
  try {
    for (;;) {
      n += writeSync(fd, chunk);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  return n;
}

interface Setup {
  t: TestEmu;
  p: AgentProcess;
  admin: string;
  stateDir: string;
  spoolFile: string;
  written: number;
  write(n: number): void;
}

async function setup(overrides: Record<string, unknown> = {}): Promise<Setup> {
  const dir = await tempDir();
  const t = await startEmu(dir);
  const stateDir = path.join(dir, 'state');
  mountTmpfs(stateDir, 8 * 1024 * 1024);
  const cfg = await writeConfig(dir, t, { batch: { max_bytes: 10_000, linger_ms: 50 }, ...overrides });
  const spoolFile = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
  mkdirSync(path.dirname(spoolFile), { recursive: true });
  const s: Setup = {
    t,
    p: spawnAgent(cfg.configFile),
    admin: '',
    stateDir,
    spoolFile,
    written: 0,
    write(n) {
      appendFileSync(spoolFile, lines('d', s.written, n));
      s.written += n;
    },
  };
  s.admin = (await s.p.started)!;
  s.write(2000);
  await waitForDelivery(t, 'ev', 'd', 2000, 'the first 2000 lines');
  return s;
}

async function readyz(admin: string): Promise<{ status: number; body: { ready: boolean; reasons: string[] } }> {
  return (await getJson(`${admin}/readyz`)) as { status: number; body: { ready: boolean; reasons: string[] } };
}

/**
 * The reason is reported while the fault lasts. With `stops`, lines are read
 * but not shipped (no intent can be recorded): returns the time from which
 * nothing was in flight, once every line written by then was read and more
 * were seen coming; the caller proves with `expectNothingSentBetween`, from
 * the emulator's arrival times, that no request went out from then until the
 * fault ended.
 */
async function expectStalled(s: Setup, reason: string, stops: boolean): Promise<number> {
  const r = await waitFor(async () => {
    const x = await readyz(s.admin);
    return x.status === 503 && x.body.reasons.includes(reason) ? x : null;
  }, `/readyz 503 with reason ${reason}`, 15_000).catch((err: Error) => {
    throw new Error(`${err.message}; agent exit ${JSON.stringify(s.p.exitInfo)}, stderr ${s.p.rawErr.join('\n').slice(0, 1500)}, log: ${JSON.stringify(s.p.logs.slice(-8).map((l) => [l.msg, l.err ?? l.fault ?? '']))}`);
  });
  expect(r!.body).toEqual({ ready: false, reasons: [reason] });
  expect(await metric(s.admin, 'spoolship_parked', `reason="${reason}"`)).toBe(1);
  if (!stops) return Date.now();
  expect(s.p.logs.some((l) => l.event === 'state_fault' && l.fault === reason)).toBe(true);
  // Requests already under way finish; after that nothing new is sent, however much is written.
  await waitFor(async () => ((await getJson(`${s.admin}/status`)).body as { in_flight: number }).in_flight === 0, 'requests in flight to finish');
  await s.t.emu.settled();
  const stalledAt = Date.now();
  // A request from here on fails the waits below at once.
  const unsent = (ok: boolean): boolean => {
    const sent = s.t.records.filter((x) => x.at >= stalledAt);
    if (sent.length > 0) throw new Error(`${sent.length} request(s) sent while the state could not record them: ${sent.map((x) => x.outcome).join(', ')}`);
    return ok;
  };
  // Every line written so far is read: its batches wait for intents that cannot be recorded.
  await waitFor(async () => unsent((await metric(s.admin, 'spoolship_lines_read_total', 'datasource="ev"')) >= s.written), 'every line written read', 15_000);
  // More lines come, and the agent sees them (reading waits while the batches do).
  const behind = await metric(s.admin, 'spoolship_behind_bytes');
  s.write(1000);
  await waitFor(async () => unsent((await metric(s.admin, 'spoolship_behind_bytes')) >= behind + 1000 * LINE_BYTES), 'the new lines counted behind', 15_000);
  expect(((await getJson(`${s.admin}/status`)).body as { in_flight: number }).in_flight).toBe(0);
  expect((await readyz(s.admin)).status).toBe(503);
  return stalledAt;
}

/** No Events request arrived from `from` until `until` (the emulator's arrival times). */
async function expectNothingSentBetween(s: Setup, from: number, until: number): Promise<void> {
  await s.t.emu.settled();
  const during = s.t.records.filter((r) => r.at >= from && r.at < until);
  expect(during.map((r) => r.outcome), 'no request while the state could not record it').toEqual([]);
}

async function expectResumed(s: Setup, reason: string): Promise<void> {
  await waitFor(async () => (await readyz(s.admin)).status === 200, '/readyz 200 again', 15_000);
  expect(await metric(s.admin, 'spoolship_parked', `reason="${reason}"`)).toBe(0);
  s.write(500);
  // Fails at once on a duplicate or a row that is not one of the lines; on timeout names the missing ones.
  await waitForDelivery(s.t, 'ev', 'd', s.written, `all ${s.written} lines after recovery`, { timeoutMs: 20_000 });
  s.p.child.kill('SIGTERM');
  expect((await s.p.exited).code).toBe(0);
  const result = await checkDelivery(s.t, 'ev', 'd', s.written);
  console.log(`[state ${reason}] ${JSON.stringify(result)}`);
  expect({ missing: result.missing, duplicates: result.duplicates, unexpected: result.unexpected }).toEqual({ missing: 0, duplicates: 0, unexpected: 0 });
}

describe('state_dir faults (process)', () => {
  it('disk full: /readyz 503 disk_full, nothing advances, resumes by itself when space returns', async () => {
    requireMount();
    const s = await setup();
    const filler = path.join(s.stateDir, 'filler');
    fill(filler);
    s.write(3000); // batches whose intents cannot be recorded
    const stalledAt = await expectStalled(s, 'disk_full', true);
    const freedAt = Date.now();
    rmSync(filler);
    await expectResumed(s, 'disk_full');
    await expectNothingSentBetween(s, stalledAt, freedAt);
    expect(s.p.logs.some((l) => l.event === 'state_fault_cleared')).toBe(true);
  });

  it('disk full: a new file is discovered while it lasts, so one renamed out of the patterns then ships once space returns', async () => {
    requireMount();
    const s = await setup();
    const filler = path.join(s.stateDir, 'filler');
    fill(filler);
    s.write(3000);
    await waitFor(async () => (await readyz(s.admin)).body.reasons?.includes('disk_full'), '/readyz disk_full', 15_000);
    // Its state record cannot be written now: the scan must not wait for the disk.
    const fresh = path.join(path.dirname(s.spoolFile), '..', 'ev2', 'b.ndjson');
    mkdirSync(path.dirname(fresh));
    appendFileSync(fresh, lines('e', 0, 20));
    await waitFor(() => s.p.logs.some((l) => l.event === 'file_discovered' && l.file === fresh), 'b.ndjson discovered while the disk is full', 15_000);
    renameSync(fresh, `${fresh}.1`);
    appendFileSync(`${fresh}.1`, lines('e', 20, 3));
    rmSync(filler);
    await waitForDelivery(s.t, 'ev2', 'e', 23, 'every line of the renamed file', { timeoutMs: 20_000 });
    await expectResumed(s, 'disk_full');
  });

  it('read-only state_dir: /readyz 503 state_dir_unwritable, resumes by itself when writable again', async () => {
    requireMount();
    const s = await setup();
    // The kernel refuses `remount,ro` while files are open for writing (the
    // journal is), so the state_dir path is covered with a read-only bind
    // mount of itself: every path operation (new journal, checkpoint,
    // rename, queue segment) gets EROFS, as after a read-only remount, while
    // descriptors opened before keep writing to the tmpfs underneath. So the
    // agent can still record (and ship) through its open journal; what must
    // show is that its state_dir is unwritable (checkpoints fail).
    sh('mount', ['--bind', s.stateDir, s.stateDir]);
    sh('mount', ['-o', 'remount,ro,bind', s.stateDir]);
    let covered = true;
    onCleanup(async () => {
      if (covered) unmount(s.stateDir);
    });
    s.write(3000);
    await expectStalled(s, 'state_dir_unwritable', false);
    unmount(s.stateDir);
    covered = false;
    await expectResumed(s, 'state_dir_unwritable');
  });

  it('disk full while writing a dead letter: the disk_full state, not an exit; the line is stored once space returns', async () => {
    requireMount();
    const s = await setup({ validate: 'json' });
    const filler = path.join(s.stateDir, 'filler');
    fill(filler);
    appendFileSync(s.spoolFile, 'this line is not JSON\n');
    s.write(100);
    await waitFor(async () => (await readyz(s.admin)).body.reasons?.includes('disk_full'), '/readyz disk_full', 15_000).catch((err: Error) => {
      throw new Error(`${err.message}; agent exit ${JSON.stringify(s.p.exitInfo)}; log ${JSON.stringify(s.p.logs.slice(-5).map((l) => [l.msg, l.err ?? '']))}`);
    });
    rmSync(filler);
    await waitFor(async () => (await metric(s.admin, 'spoolship_lines_dead_lettered_total', 'reason="invalid_json"')) === 1, 'the dead letter stored', 20_000);
    await expectResumed(s, 'disk_full');
    const dl = readFileSync(path.join(s.stateDir, 'dead-letter', 'ev.ndjson'), 'utf8').trim().split('\n');
    expect(dl).toHaveLength(1);
    expect(JSON.parse(dl[0]!)).toMatchObject({ reason: 'invalid_json', line: 'this line is not JSON' });
  });

  it('disk full while acknowledging a queued batch: the disk_full state, not an exit; resumes when space returns', async () => {
    requireMount();
    const s = await setup({ retry: { initial_ms: 20, max_ms: 100 } });
    // An outage moves batches to the disk queue.
    s.t.emu.setFaults([{ kind: 'status', status: 503 }]);
    s.write(500);
    await waitFor(async () => (await metric(s.admin, 'spoolship_queue_batches')) >= 1, 'batches in the disk queue', 20_000);
    const filler = path.join(s.stateDir, 'filler');
    fill(filler);
    // The outage ends while the disk is full: the replay is acknowledged by
    // the API, and the queue's own ack record cannot be written.
    s.t.emu.setFaults([]);
    await waitFor(async () => (await readyz(s.admin)).body.reasons?.includes('disk_full'), '/readyz disk_full', 15_000).catch((err: Error) => {
      throw new Error(`${err.message}; agent exit ${JSON.stringify(s.p.exitInfo)}; log ${JSON.stringify(s.p.logs.slice(-5).map((l) => [l.msg, l.err ?? '']))}`);
    });
    rmSync(filler);
    await expectResumed(s, 'disk_full');
  });

  it('a start on a full state_dir waits: /readyz 503 disk_full, the gauge, one ERROR; it starts by itself when space returns and sends every line once', async () => {
    requireMount();
    const w = await waitingStart();
    // An agent shipped from this state_dir before: its lock file, checkpoint and journals are there.
    w.write(100);
    const first = spawnAgent(w.cfg.configFile);
    await first.started;
    await waitForDelivery(w.t, 'ev', 'd', 100, 'the first 100 lines');
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    const filler = path.join(w.stateDir, 'filler');
    fill(filler);
    w.write(200);
    const p = spawnAgent(w.cfg.configFile);
    const admin = await faultReported(p, 'disk_full');
    expect(await metric(admin, 'spoolship_parked', 'reason="disk_full"')).toBe(1);
    expect((await readyz(admin)).body).toEqual({ ready: false, reasons: ['disk_full'] });
    // The spool's Data Source has its series at 0 already (SPEC 7), before the state is open.
    expect(await metric(admin, 'spoolship_lines_acked_total', 'datasource="ev"')).toBe(0);
    expect(w.t.emu.stats().rows.ev).toBe(100);
    rmSync(filler);
    // The same process starts (it waited rather than exited).
    await p.started;
    expect(p.logs.filter((l) => l.event === 'state_fault'), 'one ERROR for the whole wait').toHaveLength(1);
    expect(p.logs.some((l) => l.event === 'state_fault_cleared')).toBe(true);
    await waitForDelivery(w.t, 'ev', 'd', 300, 'every line after space returned');
    await waitFor(async () => (await readyz(admin)).status === 200, '/readyz 200');
    expect(await metric(admin, 'spoolship_parked', 'reason="disk_full"')).toBe(0);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    const result = await checkDelivery(w.t, 'ev', 'd', 300);
    expect({ missing: result.missing, duplicates: result.duplicates, unexpected: result.unexpected }).toEqual({ missing: 0, duplicates: 0, unexpected: 0 });
  });

  it('a restart on a state_dir full after an outage filled its disk queue: no fatal error at the stop or the start; it waits, then ships every line once', async () => {
    requireMount();
    const dir = await tempDir();
    const t = await startEmu(dir);
    const stateDir = path.join(dir, 'state');
    mountTmpfs(stateDir, 1024 * 1024);
    // Bodies as they are (no compression): the queue fills the rest of the disk beside a filler.
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 20_000, linger_ms: 50 }, queue: { max_bytes: '10MB' }, compression: { codec: 'none' }, shutdown_timeout_ms: 3000 });
    const spoolFile = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(spoolFile), { recursive: true });
    let written = 0;
    const write = (n: number) => {
      appendFileSync(spoolFile, lines('d', written, n));
      written += n;
    };
    t.emu.setFaults([{ kind: 'status', status: 503 }]);
    const first = spawnAgent(cfg.configFile);
    await first.started;
    write(20_000);
    // The queue takes what the volume allows (it leaves a reserve free), then
    // something else takes the rest, and the agent stops on the full disk.
    await waitFor(() => first.logs.some((l) => l.event === 'queue_full'), 'the queue full', 30_000);
    fill(path.join(stateDir, 'filler'));
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect(first.logs.filter((l) => l.event === 'fatal'), 'the stop on a full disk is no fatal error').toEqual([]);

    const second = spawnAgent(cfg.configFile);
    const admin2 = await faultReported(second, 'disk_full');
    rmSync(path.join(stateDir, 'filler'));
    t.emu.setFaults([]);
    await second.started;
    await waitForDelivery(t, 'ev', 'd', written, `all ${written} lines after space returned`, { timeoutMs: 30_000 });
    await waitFor(async () => (await readyz(admin2)).status === 200, '/readyz 200');
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(second.logs.filter((l) => l.event === 'fatal'), 'the start on a full disk is no fatal error').toEqual([]);
    const result = await checkDelivery(t, 'ev', 'd', written);
    expect({ missing: result.missing, duplicates: result.duplicates, unexpected: result.unexpected }).toEqual({ missing: 0, duplicates: 0, unexpected: 0 });
  });

  it('a start on a read-only state_dir waits (state_dir_unwritable); SIGTERM ends the wait with exit 0; the next start ships', async () => {
    requireMount();
    const w = await waitingStart();
    w.write(100);
    sh('mount', ['--bind', w.stateDir, w.stateDir]);
    sh('mount', ['-o', 'remount,ro,bind', w.stateDir]);
    let covered = true;
    onCleanup(async () => {
      if (covered) unmount(w.stateDir);
    });
    const p = spawnAgent(w.cfg.configFile);
    const admin = await faultReported(p, 'state_dir_unwritable');
    expect((await readyz(admin)).body).toEqual({ ready: false, reasons: ['state_dir_unwritable'] });
    expect(await metric(admin, 'spoolship_parked', 'reason="state_dir_unwritable"')).toBe(1);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    expect(p.logs.some((l) => l.event === 'stopped')).toBe(true);
    expect(p.logs.some((l) => l.event === 'started')).toBe(false);
    expect(w.t.emu.stats().rows.ev ?? 0).toBe(0);
    unmount(w.stateDir);
    covered = false;
    const again = spawnAgent(w.cfg.configFile);
    await again.started;
    await waitForDelivery(w.t, 'ev', 'd', 100, 'the lines once writable');
    again.child.kill('SIGTERM');
    expect((await again.exited).code).toBe(0);
  });
});

interface WaitingStart {
  t: TestEmu;
  cfg: Awaited<ReturnType<typeof writeConfig>>;
  stateDir: string;
  write(n: number): void;
}

/** An emulator, a config and a 1 MB tmpfs state_dir, for the starts above. */
async function waitingStart(): Promise<WaitingStart> {
  const dir = await tempDir();
  const t = await startEmu(dir);
  const stateDir = path.join(dir, 'state');
  mountTmpfs(stateDir, 1024 * 1024);
  const cfg = await writeConfig(dir, t);
  const spoolFile = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
  mkdirSync(path.dirname(spoolFile), { recursive: true });
  let written = 0;
  return {
    t,
    cfg,
    stateDir,
    write(n) {
      appendFileSync(spoolFile, lines('d', written, n));
      written += n;
    },
  };
}

/** The start's ERROR state_fault for `fault`; returns the admin address it names. */
async function faultReported(p: AgentProcess, fault: string): Promise<string> {
  const e = await waitFor(async () => p.logs.find((l) => l.event === 'state_fault'), 'the ERROR state_fault', 15_000).catch((err: Error) => {
    throw new Error(`${err.message}; agent exit ${JSON.stringify(p.exitInfo)}; stderr ${p.stderr.slice(0, 1500)}`);
  });
  expect(e).toMatchObject({ level: 50, fault });
  expect(e!.msg).toContain(fault === 'disk_full' ? 'free space there' : 'make it writable');
  return e!.admin as string;
}
