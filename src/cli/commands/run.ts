import { isDeepStrictEqual } from 'node:util';
import { Agent } from '../../agent/agent.js';
import { StartStoppedError } from '../../agent/state-wait.js';
import type { StateLock } from '../../state/lock.js';
import { loadConfig, restartRequiredChanges } from '../../config/index.js';
import type { Config, LoadedConfig } from '../../config/types.js';
import { EXIT_FAILURE, EXIT_OK, SpoolshipError, formatProblem } from '../../errors.js';
import { createLogger, type Logger } from '../../log.js';
import { createMetrics } from '../../metrics/metrics.js';
import { SharedAdmin } from '../../admin/server.js';
import { armCrashPoint } from '../../util/crashpoint.js';
import { memorySettingsApplied, ownHeapGrowth, reexecForRun } from '../memory.js';
import { compressionThreads, threadpoolSize } from '../../codec/threads.js';
import { nodeEndOfLife } from '../node-support.js';
import { HeapGrowth } from '../../util/heap-growth.js';
import { Scavenger, collections } from '../../util/scavenge.js';
import { parseCommandArgs, type CliIo, type Command } from '../command.js';
import { BudgetMemory } from '../../sender/budget-memory.js';
import { unreadableFiles } from '../../agent/preflight.js';

const usage = `Usage: spoolship run [-c FILE]

Run the agent: watch the spool, batch, compress and ship every line to the
Events API, and serve /metrics /healthz /readyz /status on admin.listen.

Options:
  -c, --config FILE  config file (default: $SPOOLSHIP_CONFIG, ./config/spoolship.yaml,
                     /etc/spoolship/spoolship.yaml)

Signals:
  SIGTERM, SIGINT    stop reading, drain in-flight requests (shutdown_timeout_ms),
                     persist state, exit 0
  SIGHUP             reload the config file and the token file. An invalid new
                     config is rejected (problems logged) and the old one kept;
                     a changed one restarts the pipeline gracefully (no loss, no
                     duplicates). state_dir and admin.listen need a restart.
`;

/** The new config, with the restart-only keys kept at their running values. */
function applicable(current: Readonly<Config>, next: Readonly<Config>, log: Logger): Readonly<Config> {
  const kept = restartRequiredChanges(current, next);
  if (kept.length === 0) return next;
  for (const key of kept) log.warn({ event: 'reload_key_kept', key }, 'this key changes only at a restart; keeping the running value');
  const merged = structuredClone(next) as Config;
  merged.state_dir = current.state_dir;
  merged.admin = { ...merged.admin, listen: current.admin.listen };
  return merged;
}

class Daemon {
  private agent!: Agent;
  private fatalError: unknown = null;
  private wakeExit: () => void = () => undefined;
  readonly stopped = new Promise<void>((resolve) => (this.wakeExit = resolve));
  private reloading: Promise<void> = Promise.resolve();
  /**
   * SIGTERM/SIGINT came: a reload under way starts no new pipeline after its
   * drain (it used to, and the stop then waited a second whole
   * shutdown_timeout_ms for it: ~50 s at the default, past Kubernetes' 30 s).
   */
  private stopRequested = false;
  /** Ends a start that waits out a full or read-only state_dir (agent/state-wait.ts). */
  private readonly stopping = new AbortController();

  constructor(
    private loaded: LoadedConfig,
    private log: Logger,
    private readonly io: CliIo,
  ) {}


  private started: Promise<void> = Promise.resolve();
  /** V8's heap growth follows the state's size, unless node was given its own. */
  private readonly heapGrowth = ownHeapGrowth(process.execArgv) ? null : new HeapGrowth();
  /** Compressed bodies' native memory goes back soon after the pipeline drops it. */
  private readonly scavenger = new Scavenger(collections());
  /** One registry for the process: a reload is not a restart, so no counter goes down (each agent binds to it). */
  private readonly metrics = createMetrics();

  /** admin.listen, bound once for the process: a reload's new agent serves on the same address (docs/configuration.md "Reloading": it needs a restart). */
  private admin: SharedAdmin | null = null;
  /** The request budget's memory (a Retry-After under way, the 413 limit, the last start), kept across reloads to the same API host. */
  private budget: BudgetMemory | null = null;
  /** When a batch was last acknowledged: a reload is not progress (/readyz no_progress). */
  private readonly progress: { lastAckAt?: number } = {};
  /**
   * The state_dir's lock from the first reload on: the closed agent hands it
   * over (Agent.takeLock), so no second `run` can take the state_dir between
   * the old pipeline's stop and the new one's start; released at the end.
   */
  private stateLock: StateLock | null = null;

  async start(): Promise<void> {
    try {
      if (this.loaded.config.admin.listen !== '') {
        this.admin = new SharedAdmin(this.metrics.registry);
        await this.admin.listen(this.loaded.config.admin.listen, this.loaded.config.state_dir);
      }
      this.started = this.startAgent(this.loaded.config).then((a) => void (this.agent = a));
      await this.started;
    } catch (err) {
      await this.admin?.server.close();
      throw err;
    }
  }

  private startAgent(config: Readonly<Config>): Promise<Agent> {
    if (this.budget?.baseUrl !== config.api.base_url) this.budget = new BudgetMemory(config.api.base_url);
    return Agent.start(config, {
      log: this.log,
      metrics: this.metrics,
      env: this.io.env,
      heapGrowth: this.heapGrowth ?? undefined,
      bodyDrops: this.scavenger,
      startSignal: this.stopping.signal,
      admin: this.admin ?? undefined,
      budget: this.budget,
      progress: this.progress,
      ...(this.stateLock ? { stateLock: this.stateLock } : {}),
      onFatal: (err) => {
        this.fatalError ??= err;
        this.wakeExit();
      },
    });
  }

  /**
   * A rejection or an exception that no part of the agent handled: the same
   * orderly end as the agent's own fatal errors (ERROR `fatal`, destroy, exit
   * 1), instead of Node's bare stack trace with the state_dir still locked.
   */
  crash(err: unknown, origin: 'unhandledRejection' | 'uncaughtException'): void {
    this.log.error({ event: 'fatal', origin, err: err instanceof Error ? err.stack : String(err) }, err instanceof Error ? err.message : 'fatal error');
    this.fatalError ??= err;
    this.stopping.abort();
    this.wakeExit();
  }

  get failed(): boolean {
    return this.fatalError !== null;
  }

  stop(signal: string): void {
    this.log.info({ event: 'signal_received', signal }, 'signal received');
    this.stopRequested = true;
    this.stopping.abort();
    this.wakeExit();
  }

  /** SIGHUP: serialised, so two signals in a row do not overlap. */
  hup(): void {
    // Stopping: nothing to reload (the handlers stay on through the drain).
    if (this.stopRequested) return;
    // A SIGHUP while the agent starts reloads once it has started.
    this.reloading = this.reloading.then(() => this.started).then(() => this.reload()).catch((err) => {
      this.fatalError ??= err;
      this.wakeExit();
    });
  }

  private async reload(): Promise<void> {
    const log = this.log;
    log.info({ event: 'reload_requested', signal: 'SIGHUP', file: this.loaded.file }, 'reloading the config and the token file');
    let next: LoadedConfig;
    try {
      next = loadConfig({ file: this.loaded.file, env: this.io.env, cwd: this.io.cwd, tokenRequired: true });
    } catch (err) {
      if (!(err instanceof SpoolshipError)) throw err;
      log.warn({ event: 'reload_rejected', problems: err.message.split('\n') }, 'new config rejected; the agent keeps running on the old one');
      await this.agent.reloadToken();
      return;
    }
    const config = applicable(this.loaded.config, next.config, log);
    if (isDeepStrictEqual(config, this.loaded.config)) {
      await this.agent.reloadToken();
      log.info({ event: 'reload_unchanged' }, 'config unchanged; token file re-read');
      return;
    }
    if (this.stopRequested) return;
    // Before the old pipeline stops (agent/preflight.ts): a file it cannot read keeps the old one running.
    const unreadable = await unreadableFiles(config);
    if (unreadable.length > 0) {
      log.warn({ event: 'reload_rejected', problems: unreadable.map(formatProblem) }, 'new config rejected (a file it names cannot be read); the agent keeps running on the old one');
      await this.agent.reloadToken();
      return;
    }
    log.info({ event: 'reload_restarting' }, 'config changed: restarting the pipeline on it (in-flight requests drain first)');
    await this.agent.close({ forReload: true });
    this.stateLock ??= this.agent.takeLock();
    // Stopping: the drain above was the stop's (the old pipeline's state is
    // persisted); finish() closes the closed agent again, at once.
    if (this.stopRequested) return;
    // The new pipeline logs at the new config's level and format from its first line.
    this.log = createLogger(config.log, this.io.stderr);
    try {
      this.agent = await this.startAgent(config);
      this.loaded = { ...next, config };
    } catch (err) {
      this.log = log;
      // Stopped while the new agent waited for its state_dir: finish() closes the old one (closed already).
      if (err instanceof StartStoppedError) return;
      log.error({ event: 'reload_start_failed', err: String(err) }, 'the new config could not start; going back to the old one');
      this.agent = await this.startAgent(this.loaded.config);
    }
  }

  async finish(): Promise<number> {
    await this.reloading;
    if (this.fatalError) {
      // A fatal error: close what can be closed without writing more state
      // (bounded: Agent.destroy), then exit 1; the next start recovers from
      // what is on disk.
      await this.agent.destroy(this.fatalError);
      await this.stateLock?.release();
      await this.admin?.server.close();
      this.log.error({ event: 'exiting_after_fatal' }, 'exiting after a fatal error; the next start recovers from the state_dir');
      return EXIT_FAILURE;
    }
    await this.agent.close();
    await this.stateLock?.release();
    await this.admin?.server.close();
    return EXIT_OK;
  }
}

const command: Command = {
  name: 'run',
  summary: 'run the agent',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs('run', argv, { config: { type: 'string', short: 'c' } });
    const loaded = loadConfig({ file: values.config ?? null, env: io.env, cwd: io.cwd, tokenRequired: true });
    // The memory settings and libuv's pool for compression.threads, in this same process (src/cli/memory.ts).
    if (io.env === process.env) reexecForRun(threadpoolSize(compressionThreads(loaded.config.compression.threads).threads));
    const log = createLogger(loaded.config.log, io.stderr);
    for (const w of loaded.warnings) log.warn({ event: 'config_warning' }, w);
    const eol = nodeEndOfLife(process.version, new Date());
    if (eol) {
      log.warn(
        { event: 'node_end_of_life', node: process.version, end_of_life: eol.endOfLife },
        `Node.js ${eol.major} reached its end of life on ${eol.endOfLife} (no more security fixes): spoolship still runs on it, but supports Node.js 22 and 24; upgrade Node.js`,
      );
    }
    if (!memorySettingsApplied(io.env, process.execArgv)) {
      log.info(
        { event: 'memory_settings', applied: false, node: process.version },
        'running without the memory settings (MALLOC_ARENA_MAX, --max-semi-space-size): start spoolship as a program (the spoolship command, ./dist/cli.js) or on Node >= 22.15 to get them (README "Deployment": peak RSS is higher without them)',
      );
    }
    // Test-only: see src/util/crashpoint.ts.
    armCrashPoint(io.env.SPOOLSHIP_TEST_CRASH_AT);
    const daemon = new Daemon(loaded, log, io);
    // Handled from before the start: a signal that arrives while the agent
    // starts (or just after its start log) stops it cleanly once started,
    // instead of killing the process before its state is written.
    const onTerm = () => daemon.stop('SIGTERM');
    const onInt = () => daemon.stop('SIGINT');
    const onHup = () => daemon.hup();
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    process.on('SIGHUP', onHup);
    const onRejection = (err: unknown) => daemon.crash(err, 'unhandledRejection');
    const onException = (err: unknown) => daemon.crash(err, 'uncaughtException');
    process.on('unhandledRejection', onRejection);
    process.on('uncaughtException', onException);
    const off = () => {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      process.off('SIGHUP', onHup);
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
    };
    try {
      await daemon.start();
    } catch (err) {
      off();
      if (!(err instanceof StartStoppedError)) throw err;
      // Nothing was started: no state to write.
      if (daemon.failed) {
        log.error({ event: 'exiting_after_fatal' }, 'exiting after a fatal error; the next start recovers from the state_dir');
        return EXIT_FAILURE;
      }
      log.info({ event: 'stopped' }, 'stopped before the start finished');
      return EXIT_OK;
    }
    await daemon.stopped;
    // Kept through the drain: a second signal (Ctrl-C, then a supervisor's
    // SIGTERM) must not end the process with its default action mid-stop.
    try {
      return await daemon.finish();
    } finally {
      off();
    }
  },
};
export default command;
