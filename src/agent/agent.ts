// Longer than ~250 lines: it is the wiring of some twenty parts (what each
// is built from, the order they start in, what stops them) and nothing
// else; every rule lives in the part's own module (docs/architecture.md).
//
// The daemon: builds discovery -> tailer -> batcher -> pipeline (intent +
// compression) -> sender -> acker, the disk retry queue and its replayer,
// recovery, the admin server and the control socket; starts them in order,
// each on a stack (lifecycle.ts) that a failed start or a fatal error
// destroys last first; stops them on the clock within shutdown_timeout_ms
// (stop.ts). What the parts tell operators is observe/'s.
import path from 'node:path';
import { Batcher } from '../batcher/batcher.js';
import { createCodec, type Codec } from '../codec/index.js';
import type { Config } from '../config/types.js';
import { crc32Impl } from '../util/crc32.js';
import { compressionThreads, currentThreadpoolSize, threadpoolReport, type CpuProbe } from '../codec/threads.js';
import { StateDirLostError, StateLayoutError } from '../errors.js';
import { DestroyedError } from '../util/lifecycle.js';
import { crashWindowOf } from '../deadletter/recent.js';
import { DeadLetterStore, deadLetterDir } from '../deadletter/store.js';
import type { Logger } from '../log.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { AdminServer, listenAdmin, type Readiness, type SharedAdmin } from '../admin/server.js';
import type { EventsClient } from '../sender/http-client.js';
import { createSender } from '../sender/engine.js';
import type { BudgetMemory } from '../sender/budget-memory.js';
import { inFlightCeiling } from '../sender/from-config.js';
import { Sender } from '../sender/sender.js';
import { Router } from '../spool/routes.js';
import { Admission } from '../spool/admission.js';
import { checkLayout, LayoutReporter } from '../spool/layout.js';
import { Spooler } from '../spool/spooler.js';
import { acquireLock, type StateLock } from '../state/lock.js';
import { secureStateDir } from '../state/dir-trust.js';
import { StateDirWatch } from '../state/dir-watch.js';
import type { BodyDrops } from '../util/scavenge.js';
import type { HeapGrowth } from '../util/heap-growth.js';
import { StateStore } from '../state/store.js';
import { relocateFiles } from '../spool/relocate.js';
import { linesRead, spoolEvents, symlinkSkipped } from '../observe/spool-events.js';
import { deadLetterDropped, queueAcksDamaged, queueCompacted, queueRecordSkipped, startStateFault, stateDirTightened, stateFaultGauge, stateLockEvents } from '../observe/state-events.js';
import { ApiConnection } from './api-connection.js';
import { StartedParts, partOf } from './lifecycle.js';
import { StopSequence, type RunningParts } from './stop.js';
import { every, systemClock, type Clock } from '../util/clock.js';
import { Linger } from '../batcher/linger.js';
import { RetryQueue } from '../queue/retry-queue.js';
import { assertQueueReadable } from '../queue/format.js';
import { QueueOps } from '../control/queue-ops.js';
import { ControlServer } from '../control/server.js';
import { QueueReplayer } from '../queue/replayer.js';
import { Pipeline } from '../pipeline/pipeline.js';
import { BODIES_IN_MEMORY_BYTES, HeldBodies, spillDir } from '../pipeline/held-bodies.js';
import { Acker, type StateFault } from '../state/acker.js';
import { openWaitingForStateDir } from './state-wait.js';
import { Resender, completeQueuedIntents } from '../recovery/resend.js';
import { reportRecovery } from '../recovery/report.js';
import { CountLog } from '../observe/count-log.js';
import { SenderEvents } from '../observe/sender-events.js';
import { QueueReport, readiness } from '../observe/health.js';
import { redactUrl, statusReport } from '../report/from-agent.js';
import { queuedRangesByFile } from '../report/report.js';
import { READER_THREAD_MIN_THREADS } from '../spool/scan-reader.js';

export interface AgentDeps {
  log: Logger;
  clock?: Clock;
  random?: () => number;
  /** Periodic rescan of the spool (the backstop for missed watch events). */
  rescanMs?: number;
  /** Paths a scan looks at before reading in between (tests: 1, so that reading interleaves with every scan). */
  scanSlice?: number;
  /** Watch the spool's directories (spool/dir-watcher.ts; off in some tests, where the rescan alone drives discovery). */
  watch?: boolean;
  onFatal?: (err: unknown) => void;
  /** Told the number of files followed or tracked, on every tick (V8's heap growth follows it). */
  heapGrowth?: Pick<HeapGrowth, 'update'>;
  /** Told when a compressed body's `bytes` of native memory are no longer referenced (the Scavenger gives them back). */
  bodyDrops?: BodyDrops;
  /** Compressed bodies kept in memory before the next are spilled (default BODIES_IN_MEMORY_BYTES; tests: 0, spill every body). */
  bodiesInMemoryBytes?: number;
  /** The codec of compression.codec/level (tests: one that counts the compressions under way). */
  codec?: Codec;
  /** Where compression.threads: auto looks for the CPUs (tests: a fake cgroup tree). */
  cpuProbe?: CpuProbe;
  /** The registry to count in: the daemon's, which a SIGHUP reload's new agent takes over (no counter goes down); a new one when absent. */
  metrics?: Metrics;
  /** The environment `api.proxy: null` reads (HTTPS_PROXY, NO_PROXY and the like); default: empty, no proxy. */
  env?: NodeJS.ProcessEnv;
  /** Aborted by a stop: a start waiting out a full or read-only state_dir ends with StartStoppedError. */
  startSignal?: AbortSignal;
  /** The process's admin server, kept across SIGHUP reloads: the agent serves through it instead of listening on admin.listen itself. */
  admin?: SharedAdmin;
  /** The request budget's Retry-After pause, learned 413 limit and last start, kept across SIGHUP reloads (sender/budget-memory.ts). */
  budget?: BudgetMemory;
  /** When a batch was last acknowledged, kept across SIGHUP reloads: a reload is not progress (/readyz no_progress). */
  progress?: { lastAckAt?: number };
  /**
   * The state_dir's lock, held by the caller across a SIGHUP reload (the
   * previous agent's, Agent.takeLock): used, never released by this agent.
   * Without it the agent takes the lock itself and releases it at its stop.
   */
  stateLock?: StateLock;
}

export class Agent {
  readonly metrics: Metrics;
  adminUrl: string | null = null;
  apiUrl = '';
  private lock!: StateLock;
  /** This agent took the lock and releases it at its stop; false once it is handed over (takeLock) or when it was handed one. */
  private ownsLock = false;
  /** close({ forReload: true }): the lock part leaves the lock held, for takeLock. */
  private keepLockForReload = false;
  private store!: StateStore;
  private deadLetters!: DeadLetterStore;
  private sender!: Sender;
  private client!: EventsClient;
  private batcher!: Batcher;
  private spooler!: Spooler;
  private pipeline!: Pipeline;
  private queue!: RetryQueue;
  /** Segment files of the queue where damaged records were found (named by the ERROR queue_corrupt). */
  private readonly damagedQueueFiles = new Set<string>();
  private replayer!: QueueReplayer;
  private admin: AdminServer | null = null;
  private control: ControlServer | null = null;
  /** The address, token, client certificate, proxy route and delivery engine. */
  private readonly api: ApiConnection;
  /** Stops the tick, or null. */
  private stopTick: (() => void) | null = null;
  private readonly stopper: StopSequence;
  private linger!: Linger;
  private acker!: Acker;
  private resender!: Resender;
  private closing: Promise<void> | null = null;
  private readonly clock: Clock;
  /** One codec for the pipeline's compression and the sender's bisection (re-compressing halves). */
  private readonly codec: Codec;
  /** compression.threads, resolved (auto: the CPUs this process may use). */
  private readonly threads: ReturnType<typeof compressionThreads>;
  /** The spool is read in a thread of its own (spool/scan-reader.ts). */
  private get readerThread(): boolean {
    return this.threads.threads >= READER_THREAD_MIN_THREADS;
  }
  private senderEvents!: SenderEvents;
  private queueReport!: QueueReport;
  private readonly counts: CountLog;
  private dirWatch: StateDirWatch | null = null;
  private readonly layout: LayoutReporter;
  private fatalSeen = false;
  /** Resolves at the first fatal error: a start waiting for the first scan ends then. */
  private raiseFatal!: () => void;
  private readonly fatalRaised = new Promise<void>((resolve) => (this.raiseFatal = resolve));
  /** destroy() or a failed start: the parts are being destroyed. */
  private destroying = false;
  /** What the start brought up, released last first when it fails part-way. */
  private readonly parts = new StartedParts();
  /** Every part is built: /readyz and /status may read them. */
  private started = false;
  /** start_at: end: the start waits for the first scan (init), not ready meanwhile. */
  private firstScanPending = false;
  /** The start waits out a full or read-only state_dir (state-wait.ts). */
  private startFault: StateFault = null;

  private constructor(
    private config: Readonly<Config>,
    private readonly deps: AgentDeps,
  ) {
    this.clock = deps.clock ?? systemClock;
    this.codec = deps.codec ?? createCodec(config.compression.codec, config.compression.level);
    this.threads = compressionThreads(config.compression.threads, deps.cpuProbe);
    this.counts = new CountLog(this.clock, () => this.deps.log);
    this.stopper = new StopSequence({ clock: this.clock, log: deps.log, stateDir: config.state_dir });
    this.layout = new LayoutReporter(
      config.spool.dir,
      (event, fields, msg) => this.deps.log.warn({ event, ...fields }, msg),
      (event, fields, msg) => this.deps.log.info({ event, ...fields }, msg),
    );
    this.metrics = deps.metrics ?? createMetrics();
    this.metrics.bind({ behindBytes: () => this.behindBytes(), ready: () => this.readyz().ready });
    for (const s of config.spool.sources) this.metrics.knowDataSource(s.datasource);
    this.metrics.learnedMaxBodyBytes.set(config.batch.max_bytes);
    this.metrics.compressionThreads.set(this.threads.threads);
    if (deps.admin && config.admin.listen !== '') {
      this.adminUrl = deps.admin.url;
      deps.admin.serve({ readiness: () => this.readyz(), status: () => (this.started ? this.status() : null) });
    }
    this.api = new ApiConnection(config, {
      log: deps.log,
      metrics: this.metrics,
      parts: this.parts,
      codec: this.codec,
      clock: this.clock,
      env: deps.env ?? {},
      wake: () => this.sender.wake(this.queue.batches === 0),
      budget: deps.budget,
    });
  }

  static async start(config: Readonly<Config>, deps: AgentDeps): Promise<Agent> {
    const agent = new Agent(config, deps);
    await agent.init();
    return agent;
  }

  private async init(): Promise<void> {
    const { config: c, deps, parts } = this;
    try {
      // The admin address and the token first: a start refused for its
      // config (a taken port, no token, an unreadable token_file) must
      // create nothing (no state_dir, checkpoint or journal).
      await this.startAdmin();
      await this.api.readCredentials();
      // The Data Sources of the spool's directories have their series at 0 now,
      // before a start that waits out a full state_dir (SPEC 7: from the start).
      for (const ds of (await checkLayout(c.spool.dir)).dataSourceDirs) this.metrics.knowDataSource(ds);
      // A full or read-only state_dir: waited out, as when running (state-wait.ts).
      const up = parts.size;
      const reportFault = startStateFault(this.metrics, deps.log, c.state_dir, this.adminUrl);
      await openWaitingForStateDir(() => this.openStateDir(), {
        clock: this.clock,
        signal: deps.startSignal,
        undo: async (err) => {
          for (const f of await parts.unwind({ destroy: err }, up)) deps.log.warn({ event: 'stop_step_failed', part: f.name, err: String(f.err) }, 'releasing a part of a failed start failed');
        },
        onFault: (fault, err) => {
          this.startFault = fault;
          reportFault(fault, err);
        },
      });
      for (const ds of this.store.dataSources()) this.metrics.knowDataSource(ds);
      const baseUrl = await this.api.open();
      this.apiUrl = baseUrl;
      this.client = this.api.engine.client;
      this.sender = this.createSender();
      // Before the pipeline, which takes its buffers back and reads its open
      // bytes; the batches it closes reach the pipeline through onClose.
      this.batcher = this.createBatcher();
      this.pipeline = this.createPipeline();
      // They end together: the pipeline's deliveries wait inside the sender.
      parts.add(
        'sender and pipeline',
        partOf(
          () => Promise.all([this.sender.close(), this.pipeline.close()]),
          () => Promise.all([this.sender.destroy(), this.pipeline.destroy()]),
        ),
      );
      // The reader tells the linger when it goes idle, and the linger asks the
      // reader whether a Data Source is caught up: the linger is built first
      // (the spooler's events hold it) and reaches the spooler, built after
      // it, through caughtUp.
      this.linger = new Linger(this.batcher, {
        clock: this.clock,
        lingerMs: c.batch.linger_ms,
        slots: this.pipeline,
        caughtUp: (ds) => this.spooler.caughtUp(ds),
      });
      this.spooler = this.createSpooler();
      this.store.setSeenProvider(this.spooler);
      this.replayer = this.createReplayer();
      this.queueReport.update();
      // Queued batches first, then batches in flight at the last stop, then new data.
      this.replayer.start();
      parts.add('queue replayer', this.replayer);
      this.resender = this.createResender();
      parts.add('resender', this.resender);
      await this.resender.resendUnacknowledged();
      this.resender.checkQueue();
      this.started = true;
      await this.startControl();
      this.spooler.start();
      parts.add('spooler', this.spooler);
      this.stopTick = every(this.clock, this.linger.tickMs, () => this.tick());
      parts.add('timers', partOf(() => this.stopTimers()));
      this.dirWatch!.start((loss) => this.fatal(new StateDirLostError(loss)));
      // start_at: end takes each file's end in the first scan: `started`, and
      // /readyz ready, come after it, so a line written once the agent says
      // it has started is shipped (docs/spool.md). A stop meanwhile ends the
      // wait (then the stop's own drain and state write), and so does a
      // fatal error (the daemon destroys the agent): not `started` then.
      if (this.spooler.startsAtEnd) {
        this.firstScanPending = true;
        await untilEither(Promise.race([this.spooler.firstScanEnded, this.fatalRaised]), deps.startSignal);
        this.firstScanPending = false;
        if (this.fatalSeen) return;
      }
      const pool = threadpoolReport(this.threads, process.env);
      if (pool.small) deps.log.warn({ event: 'threadpool_small', ...pool.fields, wanted: pool.wanted }, pool.small);
      deps.log.info(
        { event: 'started', spool: c.spool.dir, state_dir: c.state_dir, api: redactUrl(baseUrl), admin: this.adminUrl, ...pool.fields, reader_thread: this.readerThread, crc32: crc32Impl },
        'spoolship started',
      );
    } catch (err) {
      this.started = false;
      this.destroying = true;
      this.closing ??= Promise.resolve();
      for (const f of await parts.unwind({ destroy: err })) deps.log.warn({ event: 'stop_step_failed', part: f.name, err: String(f.err) }, 'releasing a part of a failed start failed');
      throw err;
    }
  }

  /** The state_dir, trusted and locked, and what is kept in it (openState). */
  private async openStateDir(): Promise<void> {
    const { config: c, deps, parts } = this;
    // Before anything is written there: refused when another user could change it.
    await secureStateDir(c.state_dir, stateDirTightened(deps.log, c.state_dir));
    if (deps.stateLock) this.lock = deps.stateLock;
    else {
      this.lock = await acquireLock(c.state_dir, { onEvent: stateLockEvents(deps.log, c.state_dir) });
      this.ownsLock = true;
      // Not released when a reload takes it over (takeLock): no second agent can start in between.
      parts.add('state_dir lock', partOf(() => (this.ownsLock && !this.keepLockForReload ? this.lock.release() : undefined)));
    }
    this.dirWatch = await StateDirWatch.open(c.state_dir, this.clock);
    parts.add('state_dir watch', this.dirWatch);
    await this.openState();
  }

  /** The state store (checkpoint + journal), the dead-letter store and the disk retry queue, reconciled. */
  private async openState(): Promise<void> {
    const { config: c, deps, clock, metrics } = this;
    const log = deps.log;
    // A queue a newer release wrote stops the start before the state store writes anything.
    await assertQueueReadable(path.join(c.state_dir, 'queue'));
    this.store = await StateStore.open({ stateDir: c.state_dir, now: () => clock.now(), onBackgroundError: (err) => (this.acker ? this.acker.journalFailed(err) : this.fatal(err)), relocate: relocateFiles });
    this.parts.add('state store', this.store);
    const faultGauge = stateFaultGauge(metrics);
    this.acker = new Acker(this.store, {
      clock,
      log,
      stateDir: c.state_dir,
      events: {
        onFaultsChange: (faults) => {
          faultGauge(faults);
          // Requests wait while acknowledgements cannot be recorded (sender/clearance.ts).
          this.sender?.stateChanged();
        },
        onFatal: (err) => this.fatal(err),
      },
    });
    this.parts.add('acker', this.acker);
    reportRecovery(this.store.recovery, c.state_dir, log);
    this.deadLetters = new DeadLetterStore(deadLetterDir(c.state_dir), c.dead_letter.max_bytes, () => new Date(clock.now()), deadLetterDropped(metrics, log, c.dead_letter.max_bytes));
    // The state's crash window: a line it had not passed is read again, and its record is not written twice.
    await this.deadLetters.open(crashWindowOf(this.store));
    this.parts.add('dead-letter store', this.deadLetters);
    this.queue = await RetryQueue.open(
      path.join(c.state_dir, 'queue'),
      c.queue.max_bytes,
      queueRecordSkipped(metrics, log, () => this.resender?.checkQueue(), this.damagedQueueFiles),
      { onCompacted: queueCompacted(log), onAcksDamaged: queueAcksDamaged(metrics, log) },
    );
    this.parts.add('retry queue', this.queue);
    this.queueReport = new QueueReport(this.queue, { metrics, log, maxBatchBytes: c.batch.max_bytes, maxQueueBytes: c.queue.max_bytes });
    this.queueReport.reportRoom(c.state_dir);
    if (this.queue.batches > 0) log.info({ event: 'queue_from_before', batches: this.queue.batches, bytes: this.queue.bytes }, 'retry queue holds batches from before; sending them first');
    await completeQueuedIntents(this.store, this.queue);
    // Left by a crash between a spill file's open and its unlink (held-bodies.ts). A
    // directory that cannot be prepared is reported by the first spill that
    // fails; a link or a file in its place ends the start (exit 2).
    await HeldBodies.prepare(spillDir(c.state_dir)).catch((err: unknown) => {
      if (err instanceof StateLayoutError) throw err;
    });
  }

  private createPipeline(): Pipeline {
    const { config: c, deps, clock, metrics } = this;
    const log = deps.log;
    return new Pipeline({
      compressionThreads: this.threads.threads,
      store: this.store,
      codec: this.codec,
      sender: this.sender,
      queue: this.queue,
      onQueued: () => {
        this.queueReport.update();
        this.replayer.poke();
      },
      deadLetters: this.deadLetters,
      metrics,
      log,
      clock,
      maxInFlightCeiling: inFlightCeiling(c),
      spillDir: spillDir(c.state_dir),
      bodiesInMemoryBytes: deps.bodiesInMemoryBytes ?? BODIES_IN_MEMORY_BYTES,
      batcher: this.batcher,
      bodyDrops: deps.bodyDrops,
      maxOpenBytes: c.batch.max_open_bytes,
      maxBatchBytes: c.batch.max_bytes,
      writes: this.acker,
      onFatal: (err) => this.fatal(err),
      onParkedBatchDone: () => this.spooler?.wake(),
      pathOf: (k) => this.pathOf(k),
      progress: deps.progress,
    });
  }

  private createResender(): Resender {
    return new Resender({
      store: this.store,
      queue: this.queue,
      damagedQueueFiles: this.damagedQueueFiles,
      sink: this.pipeline,
      writes: this.acker,
      metrics: this.metrics,
      log: this.deps.log,
      clock: this.clock,
      pathOf: (k) => this.pathOf(k),
      sender: this.sender,
      onFatal: (err) => this.fatal(err),
      stop: this.deps.startSignal,
    });
  }

  private createBatcher(): Batcher {
    const { config: c, clock, metrics } = this;
    return new Batcher({
      progress: this.store.claims,
      batchIds: this.store,
      now: () => clock.now(),
      maxBytes: c.batch.max_bytes,
      maxLineBytes: c.spool.max_line_bytes,
      maxOpenBytes: c.batch.max_open_bytes,
      validateJson: c.validate === 'json',
      sizeCaps: this.sender,
      onClose: (b) => {
        this.pipeline.submit(b);
        // undici loads while this first batch compresses (http-client.ts).
        this.client.warm();
      },
      onDeadLetter: (input, key, entry) =>
        this.pipeline.deadLetter(input, key, entry, () =>
          this.counts.add('dead_letters_written', { datasource: input!.datasource, reason: input!.reason }, 1, 'lines moved to the dead-letter store by the reader (spoolship dead-letter list shows them)'),
        ),
      onLinesRead: linesRead(metrics),
    });
  }

  private createSpooler(): Spooler {
    const { config: c, deps, clock, metrics } = this;
    const log = deps.log;
    const router = new Router(c.spool.dir, c.spool.sources);
    const admission = new Admission({
      spoolDir: c.spool.dir,
      sourceBases: router.sourceBases(),
      exclude: c.spool.exclude,
      followSymlinks: c.spool.follow_symlinks,
      onSkippedLink: symlinkSkipped(log),
    });
    return new Spooler({
      router,
      admission,
      store: this.store,
      batcher: this.batcher,
      clock,
      // start_at: end only at the first start on this state_dir: at a later one an unknown file was created while
      // the agent was down, and a rebuilt state may have lost files (docs/spool.md, docs/delivery.md "Integrity of state").
      startAt: this.store.unknownFilesFromStart || !this.store.firstStart ? 'beginning' : c.spool.start_at,
      onComplete: c.spool.on_complete,
      idleMs: c.spool.idle_ms,
      forgetAfterMs: c.spool.forget_after_ms,
      maxLineBytes: c.spool.max_line_bytes,
      rescanMs: deps.rescanMs ?? 1000,
      scanSlice: deps.scanSlice,
      room: this.pipeline,
      readerThread: this.readerThread,
      watch: deps.watch ?? true,
      events: spoolEvents({ log, metrics, linger: this.linger, layout: this.layout }),
      // Tried once: a full state_dir must not stop the scan (a file renamed away meanwhile is followed all the same); the journal's retry writes it.
      persist: () => this.store.flush().catch((err) => this.acker.journalFailed(err)),
      onFatal: (err) => this.fatal(err),
    });
  }

  private createReplayer(): QueueReplayer {
    const { deps, clock, metrics } = this;
    const log = deps.log;
    return new QueueReplayer({
      queue: this.queue,
      sender: this.sender,
      clock,
      log,
      onChange: () => this.queueReport.update(),
      onPastDedupWindow: () => metrics.queuePastDedupWindow.inc(),
      onDelivered: async (id) => {
        // Called again after a full disk: the record is appended once, the flush is what is retried.
        this.store.completeQueued(id);
        this.sender.forget(id);
        await this.store.flush();
      },
      pieceKeeper: this.pipeline,
      writes: this.acker,
      onFatal: (err) => this.fatal(err),
    });
  }

  /** /metrics, /healthz, /readyz and /status on admin.listen ("" = none), unless the process serves them (deps.admin); a taken address is a config error. */
  private async startAdmin(): Promise<void> {
    const { config: c, metrics } = this;
    if (c.admin.listen === '' || this.deps.admin) return;
    // Until the parts are built (the address is taken before the state): not ready, no status.
    this.admin = new AdminServer({
      registry: metrics.registry,
      readiness: () => this.readyz(),
      status: () => (this.started ? this.status() : null),
    });
    this.adminUrl = await listenAdmin(this.admin, c.admin.listen, c.state_dir);
    this.parts.add('admin server', this.admin);
  }

  /** The control channel for `spoolship queue list|dead-letter` (src/control/). */
  private async startControl(): Promise<void> {
    const ops = new QueueOps({
      queue: this.queue,
      sender: this.sender,
      store: this.store,
      deadLetters: this.deadLetters,
      clock: this.clock,
      log: this.deps.log,
      deadLetterPath: this.pipeline,
      writes: this.acker,
      onQueueChange: () => this.queueReport.update(),
      pathOf: (k) => this.pathOf(k),
      deadLetterMaxBytes: this.config.dead_letter.max_bytes,
      status: () => this.status(),
    });
    this.control = await ControlServer.listen(this.config.state_dir, ops);
    this.parts.add('control socket', this.control);
  }

  private createSender(): Sender {
    const { config: c, metrics, deps } = this;
    this.senderEvents = new SenderEvents({
      metrics,
      log: deps.log,
      clock: this.clock,
      counts: this.counts,
      maxBatchBytes: c.batch.max_bytes,
      api: () => redactUrl(this.apiUrl),
      parkedDataSources: () => this.sender?.parkedDataSources() ?? new Map(),
      onParkMoved: () => {
        this.pipeline?.parkChanged();
        this.spooler?.wake();
      },
      deadLetters: { deadLetterLines: (...a) => this.pipeline.deadLetterLines(...a) },
    });
    return createSender(this.api.engine, c, { clock: this.clock, random: deps.random ?? Math.random, hooks: this.senderEvents, memory: deps.budget, stateHeld: () => this.acker?.writesHeld ?? false });
  }

  private pathOf(key: string): string | undefined {
    return this.store.metaOf(key)?.path ?? this.spooler?.pathOf(key);
  }

  /** Every tick: batches that lingered long enough close, queue gauges, counted log events and a 413 episode's end, the checkpoint when due, the learned limit's gauge. */
  private tick(): void {
    this.linger.tick();
    this.queueReport.update();
    this.counts.flush();
    this.senderEvents.tick();
    this.acker.tick();
    // The learned 413 limit's growth shows in its gauge also while no batch asks for it.
    this.sender.capFor();
    this.deps.heapGrowth?.update(Math.max(this.spooler.trackedCount, this.store.fileCount));
  }

  /**
   * spoolship_behind_bytes, per Data Source (asked for at scrape time): past
   * the committed offsets, and what waits in the disk retry queue. null until
   * the first scan of the spool has ended: before it, the files' sizes are not known.
   */
  private behindBytes(): Map<string, number> | null {
    if (!this.spooler?.scannedOnce) return null;
    const behind = this.spooler.behindBytes();
    for (const [ds, n] of this.store?.queuedBytesBehind() ?? []) behind.set(ds, (behind.get(ds) ?? 0) + n);
    return behind;
  }

  /** /readyz: until the parts are built (the address is taken before the state), not ready: starting, or the state_dir's fault. */
  private readyz(): Readiness {
    if (this.started && !this.firstScanPending) return this.readiness();
    const faults = this.startFault ? [this.startFault] : (this.acker?.faults ?? []);
    return { ready: false, reasons: faults.length > 0 ? faults : ['starting'] };
  }

  readiness(): Readiness {
    return readiness({ sender: this.sender, acker: this.acker, pipeline: this.pipeline, queue: this.queue }, this.clock, this.config.batch.linger_ms);
  }

  /** The body of /status and of `spoolship status --json`: the StatusReport of src/report/report.ts. */
  async status(): Promise<unknown> {
    const queueByDataSource = await this.queue.byDataSource();
    return statusReport({
      tailers: this.spooler.files,
      store: this.store,
      queuedRanges: queuedRangesByFile(this.store.queuedIntents()),
      linesRead: this.metrics.linesRead,
      linesDeadLettered: this.metrics.linesDeadLettered,
      linesAcked: this.metrics.linesAcked,
      rowsQuarantined: this.metrics.rowsQuarantined,
      spool: { dir: this.config.spool.dir, ...this.layout.current },
      parkedDataSources: this.sender.parkedDataSources(),
      budgetPark: this.sender.budgetPark.reason,
      lastError: this.senderEvents.lastError,
      readiness: this.readiness(),
      now: this.clock.now(),
      stateDir: this.config.state_dir,
      adminUrl: this.adminUrl,
      apiUrl: this.apiUrl,
      queue: { batches: this.queue.batches, bytes: this.queue.bytes },
      queueByDataSource,
      batchesActive: this.pipeline.batchesActive,
      inFlight: this.sender.inFlight.requestsInFlight,
      compression: { threads: this.threads.threads, pool: currentThreadpoolSize(process.env) },
    });
  }

  /** Is the file at `path` with inode `ino` being followed (discovered, not finished)? */
  isFollowing(path: string, ino: number): boolean {
    return this.spooler.isFollowing(path, ino);
  }

  /** SIGHUP: re-read the token file and the client certificate, and retry parked work now. */
  reloadToken(): Promise<void> {
    return this.api.reload();
  }

  /**
   * An error that ends the agent: log it once and hand it to the daemon, which
   * calls destroy() and exits 1 (the next start recovers from the state_dir).
   */
  private fatal(err: unknown): void {
    // Work abandoned by a destroy (a failed start, an earlier fatal error, a
    // stop out of time destroying its parts) ends in errors of its own.
    if (this.fatalSeen || this.destroying || err instanceof DestroyedError) return;
    this.fatalSeen = true;
    this.raiseFatal();
    const loss = err instanceof StateDirLostError ? { what: err.loss.what, how: err.loss.how, path: err.loss.path } : {};
    this.deps.log.error({ event: err instanceof StateDirLostError ? 'state_dir_lost' : 'fatal', ...loss, err: err instanceof Error ? err.stack : String(err) }, err instanceof Error ? err.message : 'fatal error');
    (this.deps.onFatal ?? ((e) => { throw e; }))(err);
  }

  /**
   * Graceful stop; idempotent. Returns when state is on disk, within
   * shutdown_timeout_ms whatever the server does (agent/stop.ts).
   * `forReload`: the process goes on with a new pipeline (SIGHUP), so the
   * log does not say "stopped".
   */
  close(opts: { forReload?: boolean } = {}): Promise<void> {
    // A reload keeps the state_dir locked: the next agent takes the lock over (takeLock).
    if (opts.forReload && !this.closing) this.keepLockForReload = true;
    this.closing ??= this.stopper.graceful(this.runningParts(), this.config.shutdown_timeout_ms, opts.forReload === true);
    return this.closing;
  }

  /**
   * After close({ forReload: true }): the state_dir's lock, still held, for
   * the next agent (AgentDeps.stateLock); the caller releases it in the end.
   * Null when this agent did not own it (it was handed one: the caller has
   * it already) or never took it.
   */
  takeLock(): StateLock | null {
    if (!this.ownsLock || !this.keepLockForReload) return null;
    this.ownsLock = false;
    return this.lock;
  }

  /** After a fatal error: stop without writing more state, within FATAL_CLOSE_MS (agent/stop.ts). */
  destroy(err?: unknown): Promise<void> {
    this.destroying = true;
    this.closing ??= this.stopper.afterFatal(this.runningParts(), err);
    return this.closing;
  }

  private stopTimers(): void {
    this.stopTick?.();
    this.stopTick = null;
    void this.linger?.close();
    void this.acker?.close();
  }

  private runningParts(): RunningParts {
    return {
      stopTimers: () => this.stopTimers(),
      control: this.control,
      spooler: this.spooler,
      batcher: this.batcher,
      resender: this.resender,
      pipeline: this.pipeline,
      sender: this.sender,
      replayer: this.replayer,
      client: this.client,
      persist: async () => {
        await this.deadLetters.flush();
        await this.acker.close();
        await this.store.flush();
        await this.store.checkpoint();
        await this.store.close();
        await this.queue.close();
      },
      started: this.parts,
      flushLogs: () => {
        this.counts.flush(true);
        this.senderEvents?.flush();
      },
    };
  }
}

/** Resolves when `p` does, or when `signal` aborts. */
function untilEither(p: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return p;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void p.then(done);
  });
}
