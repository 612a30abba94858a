// kill -9 at seeded random moments while lines are written and files rotate,
// with every request slowed so that requests are in flight at each kill.
// Afterwards a clean run drains everything: no line is missing, and the
// duplicates stay within README "Delivery guarantee"'s bound, computed from what the
// emulator saw around each kill: the batches in flight at the kill plus the
// batches acknowledged in the last 100 ms before it.
import { appendFileSync, cpSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectByteIdenticalRetries } from '../support/byte-identical.js';
import {
  ACK_WINDOW_MS,
  ANSWER_LATENCY_SLACK_MS,
  LINE_BYTES,
  checkDelivery,
  errorsIn,
  kill9,
  lines,
  prng,
  rowIds,
  sleep,
  spawnAgent,
  startEmu,
  tempDir,
  waitFor,
  waitForDelivery,
  writeConfig,
  type AgentProcess,
  type TimedRecord,
} from './helpers.js';

const SEED = Number(process.env.SPOOLSHIP_TEST_SEED ?? 20261121);
const CYCLES = 12;
const SLOW_MS = 200;
const LINES_PER_BATCH = 100;

/** Appends fixed-size lines to <spool>/ev/app.ndjson and rotates it by rename-and-create. */
class SpoolWriter {
  written = 0;
  rotations = 0;
  /** Rotations to a name the patterns do not match. */
  detached = 0;
  private timer: NodeJS.Timeout | null = null;
  private sinceRotate = 0;
  private rotateAt: number;

  /** When the current app.ndjson was created (test clock). */
  private createdAt = Date.now();

  constructor(
    private readonly dir: string,
    private readonly rand: () => number,
    /** May the current file (created at `createdAt`) leave the patterns? Only once an agent has recorded it. */
    private readonly mayDetach: (createdAt: number) => boolean,
  ) {
    mkdirSync(dir, { recursive: true });
    this.rotateAt = this.nextRotate();
  }

  private nextRotate(): number {
    return 800 + Math.floor(this.rand() * 1600);
  }

  start(linesPerTick: number, tickMs: number): void {
    this.timer = setInterval(() => this.tick(linesPerTick), tickMs);
  }

  tick(n: number): void {
    appendFileSync(path.join(this.dir, 'app.ndjson'), lines('k', this.written, n));
    this.written += n;
    this.sinceRotate += n;
    if (this.sinceRotate >= this.rotateAt) {
      // Rename-and-create: half the time to a name the patterns still match
      // (keeps its progress), half the time out of the patterns (read to its end).
      // A file no agent has seen yet cannot be followed out of the patterns by
      // anyone (true of every tailing tool): that case keeps a matching name.
      this.rotations++;
      const out = this.rotations % 2 === 1 && this.mayDetach(this.createdAt);
      const to = out ? `app.ndjson.${this.rotations}` : `app-${this.rotations}.ndjson`;
      if (out) this.detached++;
      renameSync(path.join(this.dir, 'app.ndjson'), path.join(this.dir, to));
      this.createdAt = Date.now();
      this.sinceRotate = 0;
      this.rotateAt = this.nextRotate();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

interface Kill {
  cycle: number;
  at: number;
  /** Requests the emulator had read and not answered when the kill was sent. */
  seenInFlight: number;
  inFlight: TimedRecord[];
  recentAcks: TimedRecord[];
}

const linesOf = (r: TimedRecord): number => Math.round((r.decodedBytes ?? LINES_PER_BATCH * LINE_BYTES) / LINE_BYTES);

describe('kill -9 at random moments (process)', () => {
  it(`loses no line and duplicates within the SPEC bound over ${CYCLES} seeded kill cycles (seed ${SEED})`, async () => {
    const rand = prng(SEED);
    const dir = await tempDir();
    const t = await startEmu(dir, { faults: [{ kind: 'slow', delay_ms: SLOW_MS }] });
    const cfg = await writeConfig(dir, t, {
      // Fixed-size lines and a batch size that is a whole number of them: every full batch is LINES_PER_BATCH lines.
      batch: { max_bytes: LINES_PER_BATCH * LINE_BYTES, linger_ms: 100 },
      admin: { listen: '' },
    });
    const runs: AgentProcess[] = [];
    // The current file was discovered by an agent that then lived long enough
    // to journal it (group commit: 100 ms).
    const recorded = (createdAt: number): boolean =>
      runs.some((p) =>
        p.logs.some(
          (l) => l.event === 'file_discovered' && String(l.file).endsWith('/app.ndjson') && (l.time as number) >= createdAt && (p.exitInfo?.at ?? Date.now()) - (l.time as number) > 300,
        ),
      );
    const writer = new SpoolWriter(path.join(cfg.spoolDir, 'ev'), rand, recorded);
    writer.tick(2000);
    writer.start(40, 20); // ~2000 lines/s, faster than one request at a time can carry
    const kills: Kill[] = [];
    const restarts: string[] = [];
    const errorLogs: string[] = [];
    try {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const p = spawnAgent(cfg.configFile);
        runs.push(p);
        const startedAt = Date.now();
        await p.started;
        // The pipeline is flowing (an answer arrived since this start), then a random moment.
        await waitFor(() => t.records.some((r) => r.at > startedAt && r.outcome === 200), `cycle ${cycle}: a request acknowledged`, 20_000);
        await sleep(Math.floor(rand() * 900));
        // The kill must find requests in flight (what the bound is about): on
        // a loaded machine the random moment can fall between requests, so
        // wait for one to be under way at the emulator.
        await waitFor(() => t.inFlight() > 0, `cycle ${cycle}: a request in flight`, 20_000, 5);
        const seenInFlight = t.inFlight();
        const at = await kill9(p);
        kills.push({ cycle, at, inFlight: [], recentAcks: [], seenInFlight });
        // To debug a failure: keep the state as each kill left it.
        if (process.env.SPOOLSHIP_TEST_KEEP) cpSync(cfg.stateDir, `${cfg.stateDir}-after-kill-${cycle}`, { recursive: true });
        const errs = errorsIn(p);
        restarts.push(`cycle ${cycle}: ${p.logs.length} log lines, errors ${JSON.stringify(errs.map((e) => e.msg))}`);
        errorLogs.push(...errs.map((e) => `cycle ${cycle}: ${e.msg}`));
        errorLogs.push(...p.rawErr.map((l) => `cycle ${cycle} stderr: ${l}`));
      }
      writer.stop();
      const total = writer.written;
      // A clean run drains everything, then SIGTERM.
      const final = spawnAgent(cfg.configFile);
      runs.push(final);
      await final.started;
      // Not a waitFor: on a timeout the assertions below say what is missing.
      await waitForDelivery(t, 'ev', 'k', total, 'all lines', { timeoutMs: 40_000, everyMs: 500, duplicates: 'allow' }).catch(() => undefined);
      console.log(`[kill9] final run logs: ${JSON.stringify(final.logs.map((l) => l.msg))}`);
      final.child.kill('SIGTERM');
      const exit = await final.exited;
      expect(exit.code, `seed ${SEED}: final run exits 0 on SIGTERM`).toBe(0);
      expect(errorsIn(final)).toEqual([]);
      // Every slowed request has been answered by now.
      await sleep(SLOW_MS * 2);

      for (const k of kills) {
        // Arrived at or before the kill (millisecond clocks), answered at or after it.
        k.inFlight = t.records.filter((r) => r.at <= k.at && r.doneAt >= k.at);
        k.recentAcks = t.records.filter((r) => r.outcome === 200 && r.doneAt < k.at && r.doneAt >= k.at - ACK_WINDOW_MS - ANSWER_LATENCY_SLACK_MS);
      }
      const result = await checkDelivery(t, 'ev', 'k', total);
      const perKill = kills.map((k) => ({
        cycle: k.cycle,
        inFlight: k.inFlight.length,
        seenInFlight: k.seenInFlight,
        recentAcks: k.recentAcks.length,
        boundLines: [...k.inFlight, ...k.recentAcks].reduce((n, r) => n + linesOf(r), 0),
      }));
      const bound = perKill.reduce((n, k) => n + k.boundLines, 0);
      // Diagnosis: which run stored each duplicate (rows are appended per
      // request, in answer order). Duplicates stored during run k+1 come from
      // kill k (or, when run k+1 died before resending, from an earlier one).
      const ids = await rowIds(t, 'ev', 'k');
      const seenIds = new Uint8Array(total);
      let row = 0;
      const dupsByRun = new Array<number>(CYCLES + 1).fill(0);
      for (const r of t.records) {
        if (r.outcome !== 200) continue;
        const n = linesOf(r);
        let d = 0;
        for (let i = row; i < row + n && i < ids.length; i++) {
          const id = ids[i]!;
          if (id < 0) continue;
          if (seenIds[id]) d++;
          seenIds[id] = 1;
        }
        row += n;
        let run = kills.findIndex((k) => r.at < k.at);
        if (run === -1) run = CYCLES;
        dupsByRun[run]! += d;
      }
      perKill.forEach((k, i) => Object.assign(k, { dupsNextRun: dupsByRun[i + 1] }));
      const summary = { seed: SEED, total, rotations: writer.rotations, outOfPatterns: writer.detached, requests: t.records.length, ...result, bound, perKill };
      console.log(`[kill9] ${JSON.stringify(summary)}`);
      // Every restart loaded cleanly: nothing logged at ERROR, no crash trace.
      expect([...new Set(errorLogs)], `seed ${SEED}: ERROR logs or crash traces`).toEqual([]);
      // Requests were in flight at every kill (the emulator had received them and not yet answered).
      for (const k of perKill) expect(k.inFlight, `seed ${SEED} cycle ${k.cycle}: requests in flight at the kill`).toBeGreaterThan(0);
      expect(result.unexpected, `seed ${SEED}: no mangled or foreign rows ${JSON.stringify(result.firstUnexpected)}`).toBe(0);
      expect(result.missing, `seed ${SEED}: nothing lost ${JSON.stringify(result.firstMissing)}`).toBe(0);
      expect(result.duplicates, `seed ${SEED}: duplicates within the SPEC bound ${JSON.stringify(summary)}`).toBeLessThanOrEqual(bound);
      // The batches unanswered at each kill were re-formed from their ranges and sent again with the very same bytes.
      expect(expectByteIdenticalRetries(t.records), `seed ${SEED}: batches sent again after a kill`).toBeGreaterThan(0);
    } catch (err) {
      console.error(`[kill9] failed with seed ${SEED} (replay: SPOOLSHIP_TEST_SEED=${SEED}); ${restarts.join('; ')}`);
      throw err;
    } finally {
      writer.stop();
    }
  }, 180_000);
});
