// logrotate's default rotation against the real program: rename (to a name
// the patterns do not match, or into an olddir), create the new file, then
// signal the application, which finishes its half-written line and goes on
// writing to the renamed file through its open descriptor until it reopens.
// An outside check lost 602 of 5,003 lines and split 2 this way. Here, three
// rotations, one of them with a kill -9 of the agent between the rename and
// the late writes: every line arrives, none split, and duplicates stay
// within SPEC section 3's bound for the kill. The olddir of the kill is in
// the file's directory, where a start looks for a file moved while the
// agent was down; one elsewhere is followed through the open descriptor.
import { closeSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACK_WINDOW_MS, ANSWER_LATENCY_SLACK_MS, LINE_BYTES, errorsIn, kill9, line, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig, type AgentProcess } from './helpers.js';

const PREFIX = 'r';
const BEFORE = 1000;
const LATE = 300;

/** The application: one descriptor on its log file, reopened when told to. */
class App {
  written = 0;
  private fd: number;
  constructor(private readonly file: string) {
    this.fd = openSync(file, 'a');
  }
  /** `count` whole lines, then the first part of the next one (its id is taken). */
  writeLines(count: number, halfAfter = false): void {
    let text = lines(PREFIX, this.written, count);
    this.written += count;
    if (halfAfter) text += line(PREFIX, this.written).slice(0, 40);
    writeSync(this.fd, text);
  }
  /** The rest of the half-written line, then `count` whole lines. */
  finishHalfAndWrite(count: number): void {
    const rest = line(PREFIX, this.written).slice(40);
    this.written++;
    writeSync(this.fd, rest + lines(PREFIX, this.written, count));
    this.written += count;
  }
  reopen(): void {
    closeSync(this.fd);
    this.fd = openSync(this.file, 'a');
  }
  close(): void {
    closeSync(this.fd);
  }
}

const discoveries = (p: AgentProcess, file: string) => p.logs.filter((l) => l.event === 'file_discovered' && l.file === file).length;

describe("logrotate's default rotation (process)", () => {
  it('ships the lines written to the renamed file before the application reopens, whole, across a kill -9', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    // idle_ms well above the test's steps: the renamed files are read while written to.
    const paths = await writeConfig(dir, t, { spool: { idle_ms: 10_000 } });
    const ds = path.join(paths.spoolDir, 'ev');
    const archive = path.join(dir, 'archive');
    mkdirSync(path.join(ds, 'old'), { recursive: true });
    mkdirSync(archive);
    const file = path.join(ds, 'app.ndjson');
    const app = new App(file);
    let agent = spawnAgent(paths.configFile);
    await agent.started;
    const kills: Array<{ at: number; inFlight: number }> = [];
    // In the directory, an olddir in it (the kill), an olddir elsewhere.
    const rotatedTo = [path.join(ds, 'app.ndjson.1'), path.join(ds, 'old', 'app.ndjson.2'), path.join(archive, 'app.ndjson.3')];
    for (const [i, rotated] of rotatedTo.entries()) {
      app.writeLines(BEFORE, true);
      const whole = app.written;
      // After the kill (rotation 1) lines may arrive twice, within the bound checked at the end.
      await waitForDelivery(t, 'ev', PREFIX, whole, `rotation ${i}: the ${whole} whole lines`, { duplicates: 'allow' });
      const seen = discoveries(agent, file);
      renameSync(file, rotated);
      closeSync(openSync(file, 'a')); // create
      if (i === 1) {
        // Killed between the rename and the application's late writes: the
        // next start finds the renamed file in the olddir and reads it on.
        const inFlight = t.inFlight();
        kills.push({ at: await kill9(agent), inFlight });
        agent = spawnAgent(paths.configFile);
        await agent.started;
      } else {
        await waitFor(() => discoveries(agent, file) > seen, `rotation ${i}: the new file seen by a scan`);
      }
      app.finishHalfAndWrite(LATE);
      app.reopen();
    }
    app.writeLines(100);
    app.close();
    const total = app.written;
    const result = await waitForDelivery(t, 'ev', PREFIX, total, `all ${total} lines`, { duplicates: 'allow' });
    const recentAcks = t.records.filter((r) => r.outcome === 200 && kills.some((k) => r.doneAt < k.at && r.doneAt >= k.at - ACK_WINDOW_MS - ANSWER_LATENCY_SLACK_MS));
    const bound = recentAcks.reduce((n, r) => n + Math.round((r.decodedBytes ?? 0) / LINE_BYTES), 0) + kills.reduce((n, k) => n + k.inFlight * BEFORE, 0);
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    expect({ missing: result.missing, unexpected: result.unexpected, firstUnexpected: result.firstUnexpected }).toEqual({ missing: 0, unexpected: 0, firstUnexpected: [] });
    expect(result.duplicates, JSON.stringify({ result, bound })).toBeLessThanOrEqual(bound);
    expect(errorsIn(agent)).toEqual([]);
  });
});
