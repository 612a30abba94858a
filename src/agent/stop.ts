// How a running agent stops, on the clock (README "Delivery guarantee",
// docs/guarantees.md rule 6). Two ways:
//
// Graceful (SIGTERM, SIGINT, a SIGHUP reload), inside shutdown_timeout_ms
// whatever the server does:
// 1. stop reading, close open batches;
// 2. let batches be sent (failing ones move to the disk queue) until only
//    the persist reserve is left;
// 3. no new attempts; abandon what is still unanswered (its batch stays a
//    journal intent or queued, and is sent again at the next start);
// 4. persist: dead letters, journal, checkpoint, queue;
// 5. end every started part, last started first (agent/lifecycle.ts): the
//    connections, servers, watchers, the lock; parts closed above return at
//    once. Closed when everything above ended in time, else destroyed.
//
// After a fatal error, within FATAL_CLOSE_MS: destroy every started part,
// last first, writing no more state (the next start recovers from what is on
// disk), so the process exits instead of staying up without shipping.
//
// A start that fails part-way destroys what it started the same way: the
// stack holds only what was started.
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';
import type { LongLived } from '../util/lifecycle.js';
import type { StartedParts, Unwind } from './lifecycle.js';

/** Of shutdown_timeout_ms, kept for writing state (at most a quarter of it): waiting for answers stops this much before the deadline. */
export const PERSIST_RESERVE_MS = 2000;
/** Ending the started parts may take this long past the deadline (their close is quick; one that hangs is left). */
export const UNWIND_GRACE_MS = 250;
/** After a fatal error, the agent closes what it can within this, then the process exits 1. */
export const FATAL_CLOSE_MS = 5000;

/** The running parts, as the graceful stop sequence sees them (null: not started). */
export interface RunningParts {
  stopTimers(): void;
  control: LongLived | null;
  spooler: LongLived & { stopReading(): Promise<void> };
  batcher: { closeAll(): void };
  resender: LongLived;
  pipeline: LongLived & { drainUntil(deadline: number): Promise<boolean> };
  sender: LongLived & { readonly inFlight: { readonly longestRecentAnswerMs: number } };
  replayer: LongLived;
  client: LongLived;
  /** Dead letters, the acker's last checkpoint, the journal, the checkpoint, the queue. */
  persist(): Promise<void>;
  /** What the start brought up, to end last started first. */
  started: Pick<StartedParts, 'unwind'>;
  /** Counted log events, and the end of a 413 episode, still pending. */
  flushLogs(): void;
}

export class StopSequence {
  constructor(private readonly o: { clock: Clock; log: Logger; stateDir: string }) {}

  async graceful(p: RunningParts, timeoutMs: number, forReload: boolean): Promise<void> {
    const { clock, log } = this.o;
    const deadline = clock.now() + timeoutMs;
    const reserveMs = Math.min(PERSIST_RESERVE_MS, Math.floor(timeoutMs / 4));
    const stopWaitingAt = deadline - reserveMs;
    if (forReload) log.info({ event: 'reloading', timeout_ms: timeoutMs }, 'reload: draining the old pipeline');
    else log.info({ event: 'stopping', timeout_ms: timeoutMs }, 'stopping: draining in-flight requests');
    p.stopTimers();
    await p.control?.close();
    await this.within(p.spooler.stopReading(), stopWaitingAt);
    p.batcher.closeAll();
    await this.within(p.resender.close(), stopWaitingAt);
    // No request starts that could not be answered before the agent stops
    // waiting (cut then, its batch would be sent again at the next start):
    // the drain ends twice the longest recent answer time earlier (at most
    // half of what is left of it), then requests on the wire are answered.
    const allowance = Math.min(2 * p.sender.inFlight.longestRecentAnswerMs, Math.max(0, stopWaitingAt - clock.now()) / 2);
    await p.pipeline.drainUntil(stopWaitingAt - allowance);
    // No new attempts: deliveries waiting end; those on the wire are answered until stopWaitingAt.
    const rest = Promise.all([p.sender.close(), p.pipeline.close(), p.replayer.close()]);
    let ended = await this.within(rest, stopWaitingAt);
    if (!ended) {
      log.warn({ event: 'shutdown_timeout' }, 'shutdown timeout: unanswered requests are abandoned; their batches are sent again at the next start');
      await this.within(p.sender.destroy(), deadline);
      // The cut requests end their deliveries; queue writes they start are bounded by the deadline too.
      ended = await this.within(rest, deadline - reserveMs / 2);
      // The connections go too: one still opening (a proxy that never answers
      // the CONNECT) held the close at the end for as long as it took.
      await this.within(p.client.destroy(), deadline);
    } else {
      await this.within(p.client.close(), stopWaitingAt);
      await this.within(p.client.destroy(), deadline);
    }
    // Scans went on during the drain (files created meanwhile are in the state): they end now, before the state is written.
    await this.within(p.spooler.close(), deadline - reserveMs / 2);
    const persisted = await this.within(p.persist(), deadline);
    if (!persisted) log.error({ event: 'state_not_persisted', state_dir: this.o.stateDir }, 'shutdown timeout while writing state; the next start recovers from the journal');
    const how: Unwind = ended && persisted ? 'close' : { destroy: new Error('shutdown timeout') };
    const unwound = p.started.unwind(how).then((failures) => {
      for (const f of failures) log.warn({ event: 'stop_step_failed', part: f.name, err: String(f.err) }, 'a step of the stop sequence failed');
    });
    // Bounded too (a part that never ends must not keep the process): what is left ends with the process.
    if (!(await this.within(unwound, Math.max(deadline, clock.now() + UNWIND_GRACE_MS)))) {
      log.warn({ event: 'stop_step_failed', part: 'unwind', err: 'shutdown_timeout_ms passed' }, 'a step of the stop sequence failed');
    }
    p.flushLogs();
    if (forReload) log.info({ event: 'pipeline_closed_for_reload' }, 'old pipeline closed; starting the new one');
    else log.info({ event: 'stopped' }, 'stopped');
  }

  /** After a fatal error: destroy what was started, last first, within FATAL_CLOSE_MS. */
  async afterFatal(p: Pick<RunningParts, 'stopTimers' | 'started'>, err: unknown): Promise<void> {
    const deadline = this.o.clock.now() + FATAL_CLOSE_MS;
    p.stopTimers();
    await this.within(p.started.unwind({ destroy: err }), deadline);
  }

  /** Wait for `p` until `deadline` on the clock; false when time ran out (p goes on, unobserved). */
  async within(p: Promise<unknown>, deadline: number): Promise<boolean> {
    const done = new AbortController();
    let ok = false;
    const settled = p.then(
      () => (ok = true),
      (err) => {
        ok = true;
        this.o.log.warn({ event: 'stop_step_failed', err: String(err) }, 'a step of the stop sequence failed');
      },
    );
    void settled.then(() => done.abort());
    await this.o.clock.sleep(Math.max(0, deadline - this.o.clock.now()), done.signal);
    done.abort();
    return ok;
  }
}
