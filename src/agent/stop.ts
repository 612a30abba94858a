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
// 5. release the rest: connections, servers, watchers, the lock.
//
// After a fatal error, within FATAL_CLOSE_MS: stop everything without
// writing more state (the next start recovers from what is on disk), so the
// process exits instead of staying up without shipping.
//
// A start that fails part-way releases what it started through
// lifecycle.ts instead: nothing is in flight then.
import type { Logger } from '../log.js';
import type { Clock } from '../util/clock.js';

/** Of shutdown_timeout_ms, kept for writing state (at most a quarter of it): waiting for answers stops this much before the deadline. */
export const PERSIST_RESERVE_MS = 2000;
/** After a fatal error, the agent closes what it can within this, then the process exits 1. */
export const FATAL_CLOSE_MS = 5000;

/** The running parts, as the stop sequence sees them (null: not started). */
export interface RunningParts {
  stopTimers(): void;
  control: { close(): Promise<void> } | null;
  spooler: { stop(): Promise<void> };
  batcher: { closeAll(): void };
  resender: { close(): Promise<void> };
  pipeline: { drainUntil(deadline: number): Promise<boolean>; drainAll(): Promise<void>; stop(): void };
  sender: { stop(): void };
  replayer: { stop(): Promise<void> };
  client: { close(): Promise<void>; destroy(): Promise<void> };
  /** Dead letters, the acker's last checkpoint, the journal, the checkpoint, the queue. */
  persist(): Promise<void>;
  /** Connections, servers, watchers, the lock. */
  releaseRest(): Promise<void>;
  /** Counted log events still pending. */
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
    await this.within(p.spooler.stop(), stopWaitingAt);
    p.batcher.closeAll();
    await this.within(p.resender.close(), stopWaitingAt);
    await p.pipeline.drainUntil(stopWaitingAt);
    p.sender.stop();
    p.pipeline.stop();
    const rest = Promise.all([p.pipeline.drainAll(), p.replayer.stop()]);
    if (!(await this.within(rest, stopWaitingAt))) {
      log.warn({ event: 'shutdown_timeout' }, 'shutdown timeout: unanswered requests are abandoned; their batches are sent again at the next start');
      await this.within(p.client.destroy(), deadline);
      // The aborted requests end their deliveries; queue writes they start are bounded by the deadline too.
      await this.within(rest, deadline - reserveMs / 2);
    } else {
      await this.within(p.client.close(), stopWaitingAt);
      await this.within(p.client.destroy(), deadline);
    }
    const persisted = await this.within(p.persist(), deadline);
    if (!persisted) log.error({ event: 'state_not_persisted', state_dir: this.o.stateDir }, 'shutdown timeout while writing state; the next start recovers from the journal');
    await p.releaseRest();
    p.flushLogs();
    if (forReload) log.info({ event: 'pipeline_closed_for_reload' }, 'old pipeline closed; starting the new one');
    else log.info({ event: 'stopped' }, 'stopped');
  }

  /** After a fatal error: parts not started yet are absent. */
  async afterFatal(p: Partial<RunningParts> & Pick<RunningParts, 'stopTimers' | 'releaseRest'>): Promise<void> {
    const deadline = this.o.clock.now() + FATAL_CLOSE_MS;
    p.stopTimers();
    p.sender?.stop();
    p.pipeline?.stop();
    await this.within(Promise.all([p.spooler?.stop(), p.client?.destroy(), p.replayer?.stop()]), deadline - FATAL_CLOSE_MS / 2);
    await this.within(p.releaseRest(), deadline);
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
