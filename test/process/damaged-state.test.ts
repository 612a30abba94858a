// Hand-damaged state files: a flipped byte in a checkpoint or mid-journal,
// both checkpoints damaged (rebuilt from the journals; exit 1 without
// them), and a checkpoint of the previous format. The agent reports damage
// as an ERROR naming the file, falls back to what is intact, and never
// skips a line or sends a fragment.
import { appendFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint } from '../../src/state/checkpoint-format.js';
import { crc32 } from '../../src/util/crc32.js';
import { LINE_BYTES, getJson, kill9, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig, type AgentProcess } from './helpers.js';

const events = (p: AgentProcess, event: string) => p.logs.filter((l) => l.event === event);

async function shipThenStop(n: number, how: 'sigterm' | 'kill9') {
  const dir = await tempDir();
  const t = await startEmu(dir);
  const cfg = await writeConfig(dir, t, { batch: { max_bytes: 50 * LINE_BYTES, linger_ms: 50 } });
  const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
  mkdirSync(path.dirname(file), { recursive: true });
  appendFileSync(file, lines('d', 0, n));
  const p = spawnAgent(cfg.configFile);
  await p.started;
  await waitForDelivery(t, 'ev', 'd', n, `${n} lines`);
  if (how === 'kill9') await kill9(p);
  else {
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  }
  return { t, cfg, file };
}

async function finish(p: AgentProcess, t: Awaited<ReturnType<typeof shipThenStop>>['t'], total: number) {
  // Duplicates are allowed here (a lost journal record or queue record is
  // sent again); the tests that promise none assert it on the result.
  const r = await waitForDelivery(t, 'ev', 'd', total, `all ${total} lines`, { everyMs: 100, duplicates: 'allow' });
  p.child.kill('SIGTERM');
  expect((await p.exited).code).toBe(0);
  return r;
}

describe('damaged state (process)', () => {
  it('an edited checkpoint.json fails its CRC: ERROR naming it, .prev and the journals are used, no line skipped, no fragment sent', async () => {
    const { t, cfg, file } = await shipThenStop(1000, 'sigterm');
    const cpFile = path.join(cfg.stateDir, 'checkpoint.json');
    // Move the committed offset 505 lines on, into the middle of a line.
    const text = readFileSync(cpFile, 'utf8').replace(/"committed":(\d+)/, (_m, c: string) => `"committed":${Number(c) - 505 * LINE_BYTES + 37}`);
    writeFileSync(cpFile, text);
    appendFileSync(file, lines('d', 1000, 200));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    const r = await finish(p, t, 1200);
    expect(events(p, 'state_corrupt')).toEqual([expect.objectContaining({ what: 'checkpoint', file: cpFile, level: 50 })]);
    expect(r.duplicates).toBe(0);
  });

  it('a flipped byte mid-journal is corruption, not a torn tail: ERROR naming the journal, the records after it still count', async () => {
    const { t, cfg, file } = await shipThenStop(3000, 'kill9');
    const journals = readdirSync(cfg.stateDir).filter((n) => /^journal-\d+\.log$/.test(n)).sort();
    const journal = path.join(cfg.stateDir, journals.at(-1)!);
    const data = readFileSync(journal);
    expect(data.length).toBeGreaterThan(500);
    // Inside a record's JSON, a third of the way in.
    let at = Math.floor(data.length / 3);
    while (data[at] !== 0x22) at++; // a quote character: its flip keeps the length field intact
    data[at] = 0x27;
    writeFileSync(journal, data);
    appendFileSync(file, lines('d', 3000, 100));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await finish(p, t, 3100);
    const bad = events(p, 'state_corrupt');
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatchObject({ what: 'journal', file: journal, level: 50 });
    // It names the Data Source and the spool file ranges the lost records can touch.
    expect(bad[0]).toMatchObject({ datasources: ['ev'], affected_files: 1, affected: [{ datasource: 'ev', file }] });
    const affected = (bad[0] as unknown as { affected: Array<{ resend: Array<[number, number]>; read_from: number }> }).affected[0]!;
    expect(affected.read_from).toBeGreaterThanOrEqual(0);
    for (const [s, e] of affected.resend) expect(e).toBeGreaterThan(s);
    expect(events(p, 'journal_torn_tail')).toEqual([]);
  });

  it('both checkpoint copies damaged: the state is rebuilt from the journals; a file only the lost checkpoint knew is read from its start even with start_at: end', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { spool: { start_at: 'end' }, batch: { max_bytes: 50 * LINE_BYTES, linger_ms: 50 } });
    const a = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    const b = path.join(cfg.spoolDir, 'ew', 'b.ndjson');
    mkdirSync(path.dirname(a), { recursive: true });
    mkdirSync(path.dirname(b), { recursive: true });
    // Empty at the first scan: begun at their end, 0, and read from there.
    writeFileSync(a, '');
    const run = async (file: string, ds: string, n: number) => {
      const p = spawnAgent(cfg.configFile);
      const admin = (await p.started)!;
      // Appended once the first scan has found the file (at its end, 0): before, the lines would be "existing data".
      await waitFor(async () => ((await getJson(`${admin}/status`)).body as { datasources: Array<{ datasource: string; files: unknown[] }> }).datasources.some((d) => d.datasource === ds && d.files.length > 0), `${ds} found`);
      appendFileSync(file, lines('d', 0, n));
      await waitForDelivery(t, ds, 'd', n, `${n} lines of ${ds}`);
      p.child.kill('SIGTERM');
      expect((await p.exited).code).toBe(0);
    };
    // a.ndjson is followed in the first run; after the second run's two
    // checkpoints only the checkpoints name it, the journals follow b.ndjson.
    await run(a, 'ev', 200);
    writeFileSync(b, '');
    await run(b, 'ew', 100);
    appendFileSync(a, lines('d', 200, 50));
    for (const f of ['checkpoint.json', 'checkpoint.json.prev']) writeFileSync(path.join(cfg.stateDir, f), '{"version":2,"garbage":true}\n#crc32 00000000\n');
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await waitForDelivery(t, 'ew', 'd', 100, 'b.ndjson', { duplicates: 'allow' });
    // start_at: end would have begun a.ndjson at its end: its 50 new lines lost.
    await finish(p, t, 250);
    const bad = events(p, 'state_corrupt');
    expect(bad).toEqual([expect.objectContaining({ what: 'checkpoint', rebuilt_from: 'journals', level: 50, files: [path.join(cfg.stateDir, 'checkpoint.json'), path.join(cfg.stateDir, 'checkpoint.json.prev')] })]);
    expect(String(bad[0]!.problem)).toMatch(/checkpoint\.json: CRC mismatch.*checkpoint\.json\.prev: CRC mismatch/);
  });

  it('both checkpoint copies damaged and no journal record to rebuild from: exit 1 saying how to start over, nothing sent', async () => {
    const { t, cfg } = await shipThenStop(200, 'sigterm');
    for (const f of ['checkpoint.json', 'checkpoint.json.prev']) writeFileSync(path.join(cfg.stateDir, f), '{"version":2,"garbage":true}\n#crc32 00000000\n');
    for (const f of readdirSync(cfg.stateDir).filter((n) => /^journal-\d+\.log$/.test(n))) writeFileSync(path.join(cfg.stateDir, f), '');
    const before = t.emu.stats().requests_by_status['200'] ?? 0;
    const p = spawnAgent(cfg.configFile);
    const exit = await p.exited;
    expect(exit.code).toBe(1);
    expect(p.rawErr.join('\n')).toMatch(/no readable checkpoint in .*no journal record to rebuild.*start over/);
    expect(t.emu.stats().requests_by_status['200'] ?? 0).toBe(before);
  });

  it('a version 1 checkpoint (the previous release) is read once with a WARN and rewritten as version 2: nothing is shipped again', async () => {
    const { t, cfg, file } = await shipThenStop(500, 'sigterm');
    const cpFile = path.join(cfg.stateDir, 'checkpoint.json');
    for (const f of [cpFile, `${cpFile}.prev`]) {
      const parsed = decodeCheckpoint<{ version: number }>(readFileSync(f, 'utf8'));
      if (!parsed.ok) throw new Error(parsed.why);
      writeFileSync(f, JSON.stringify({ ...parsed.value, version: 1 }));
    }
    appendFileSync(file, lines('d', 500, 50));
    const p = spawnAgent(cfg.configFile);
    await p.started;
    const r = await finish(p, t, 550);
    expect(r.duplicates).toBe(0);
    expect(events(p, 'checkpoint_upgraded')).toHaveLength(1);
    expect(readFileSync(cpFile, 'utf8')).toMatch(/"version":2.*\n#crc32 [0-9a-f]{8}\n$/);
  });
});

describe('a damaged queue record (process)', () => {
  async function queueDuringOutage(n: number, where: 'body' | 'length' = 'body') {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { batch: { max_bytes: 50 * LINE_BYTES, linger_ms: 50 }, retry: { initial_ms: 10, max_ms: 50 } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    t.emu.setFaults([{ kind: 'status', status: 503 }]);
    appendFileSync(file, lines('d', 0, n));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const { metric } = await import('./helpers.js');
    await waitFor(async () => (await metric(admin, 'spoolship_queue_batches')) >= n / 50, 'every batch in the disk queue');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    t.emu.setFaults([]);
    // Damage the third record of the first segment: a byte of its compressed
    // body, or the top byte of its length field.
    const qdir = path.join(cfg.stateDir, 'queue');
    const seg = path.join(qdir, readdirSync(qdir).filter((f) => f.endsWith('.q')).sort()[0]!);
    const data = readFileSync(seg);
    let off = 0;
    for (let i = 0; i < 2; i++) off += 8 + data.readUInt32LE(off);
    const len = data.readUInt32LE(off);
    if (where === 'body') data[off + 8 + len - 10] ^= 0xff;
    else data[off + 3] ^= 0x7f;
    writeFileSync(seg, data);
    return { t, cfg, file, seg };
  }

  it('its lines are read again from the spool when unchanged: ERROR queue_corrupt (recovered), nothing lost', async () => {
    const { t, cfg, seg } = await queueDuringOutage(500);
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await finish(p, t, 500);
    // The ERROR names the damaged state file, the Data Source and the spool ranges (SPEC section 3).
    expect(events(p, 'queue_corrupt')).toEqual([expect.objectContaining({ recovered: true, files: [seg], datasource: 'ev', level: 50, lines: 50 })]);
    expect(events(p, 'queue_record_skipped')).toEqual([expect.objectContaining({ file: seg })]);
  });

  it('a queue record of a newer format version: exit 1 naming its segment, before any state file is written; nothing sent', async () => {
    const { t, cfg } = await queueDuringOutage(500);
    const qdir = path.join(cfg.stateDir, 'queue');
    // Its first record as a newer release would write it ("v":2), with a valid CRC.
    const seg = path.join(qdir, readdirSync(qdir).filter((f) => f.endsWith('.q')).sort()[0]!);
    const data = readFileSync(seg);
    const len = data.readUInt32LE(0);
    const payload = data.subarray(8, 8 + len);
    const head = payload.subarray(4, 4 + payload.readUInt32LE(0));
    const at = head.indexOf('"v":1');
    expect(at).toBeGreaterThanOrEqual(0);
    head.write('"v":2', at);
    data.writeUInt32LE(crc32(payload), 4);
    writeFileSync(seg, data);
    const stateFiles = () => Object.fromEntries(readdirSync(cfg.stateDir).filter((n) => /^(checkpoint|journal-)/.test(n)).map((n) => [n, readFileSync(path.join(cfg.stateDir, n)).toString('base64')]));
    const before = stateFiles();
    const sent = t.emu.stats().requests_by_status['200'] ?? 0;
    const p = spawnAgent(cfg.configFile);
    expect((await p.exited).code).toBe(1);
    expect(p.rawErr.join('\n')).toContain(`${seg} has format version 2`);
    expect(stateFiles()).toEqual(before);
    expect(t.emu.stats().requests_by_status['200'] ?? 0).toBe(sent);
  });

  it('a damaged length field is not taken for a torn tail: the records after it are still sent from the queue', async () => {
    const { t, cfg } = await queueDuringOutage(500, 'length');
    const p = spawnAgent(cfg.configFile);
    await p.started;
    await finish(p, t, 500);
    expect(events(p, 'queue_corrupt')).toEqual([expect.objectContaining({ recovered: true, datasource: 'ev', lines: 50 })]);
  });

  it('when those lines changed in the spool meanwhile: counted in spoolship_lines_lost_total{reason="queue_corrupt"}, ERROR, never silent', async () => {
    const { t, cfg, file, seg } = await queueDuringOutage(500);
    // The spool file rewritten in place with other bytes of the same length.
    writeFileSync(file, readFileSync(file, 'utf8').replaceAll('"pad":"x', '"pad":"y'));
    const p = spawnAgent(cfg.configFile);
    const admin = (await p.started)!;
    const { metric } = await import('./helpers.js');
    await waitFor(() => events(p, 'queue_corrupt').length > 0, 'the damaged record found').catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(p.logs.slice(-12).map((l) => [l.event ?? '', l.msg, l.err ?? '']))} ${p.rawErr.join(' ').slice(0, 500)}`);
    });
    const lost = (await waitFor(async () => (await metric(admin, 'spoolship_lines_lost_total', 'reason="queue_corrupt"')) || null, 'lines counted as lost'))!;
    expect(events(p, 'queue_corrupt')[0]).toMatchObject({ recovered: false, files: [seg], datasource: 'ev', level: 50, lines: lost });
    // Every other queued line arrives as it was queued ("pad":"x...); the rewritten file is a new file to the agent ("pad":"y...).
    const sentAsQueued = () => new Set(readFileSync(path.join(t.dataDir, 'ev.ndjson'), 'utf8').split('\n').filter((l) => l.includes('"pad":"x'))).size;
    await waitFor(() => sentAsQueued() === 500 - lost, 'every other queued line');
    expect(lost).toBe(50);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });
});

describe('what the agent owns under state_dir (process)', () => {
  it('state_dir/spill as a symlink: exit 2 naming it, and the files it points to are left alone', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t);
    const precious = path.join(dir, 'precious');
    mkdirSync(precious);
    writeFileSync(path.join(precious, 'keep.txt'), 'user data');
    mkdirSync(cfg.stateDir, { recursive: true, mode: 0o700 });
    symlinkSync(precious, path.join(cfg.stateDir, 'spill'));
    const p = spawnAgent(cfg.configFile);
    const exit = await p.exited;
    expect(exit.code).toBe(2);
    expect(readdirSync(precious), 'nothing deleted through the link').toEqual(['keep.txt']);
    expect(p.stderr).toContain(path.join(cfg.stateDir, 'spill'));
    expect(p.stderr).toContain('is a symlink');
  });
});
