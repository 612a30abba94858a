import { Agent } from '../../agent/agent.js';
import { loadConfig } from '../../config/index.js';
import { EXIT_FAILURE, EXIT_OK, SpoolshipError } from '../../errors.js';
import { createLogger } from '../../log.js';
import { armCrashPoint } from '../../util/crashpoint.js';
import { parseCommandArgs, type Command } from '../command.js';

const usage = `Usage: spoolship run [-c FILE]

Run the agent: watch the spool, batch, compress and ship every line to the
Events API, and serve /metrics /healthz /readyz /status on admin.listen.

Options:
  -c, --config FILE  config file (default: $SPOOLSHIP_CONFIG, ./config/spoolship.yaml,
                     /etc/spoolship/spoolship.yaml)

Signals:
  SIGTERM, SIGINT    stop reading, drain in-flight requests (shutdown_timeout_ms),
                     persist state, exit 0
  SIGHUP             re-read the token file and retry parked requests now; the
                     config file is re-validated and problems are logged
`;

const command: Command = {
  name: 'run',
  summary: 'run the agent',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs('run', argv, { config: { type: 'string', short: 'c' } });
    const loaded = loadConfig({ file: values.config ?? null, env: io.env, cwd: io.cwd });
    const log = createLogger(loaded.config.log, io.stderr);
    // Test-only: see src/util/crashpoint.ts.
    armCrashPoint(io.env.SPOOLSHIP_TEST_CRASH_AT);
    for (const w of loaded.warnings) log.warn(w);
    let fatalError: unknown = null;
    let wakeExit: () => void = () => undefined;
    const stopped = new Promise<void>((resolve) => (wakeExit = resolve));
    const agent = await Agent.start(loaded.config, {
      log,
      onFatal: (err) => {
        fatalError ??= err;
        wakeExit();
      },
    });
    const onStop = (signal: string) => {
      log.info({ signal }, 'signal received');
      wakeExit();
    };
    const onHup = () => {
      log.info({ signal: 'SIGHUP' }, 'reloading token file');
      try {
        loadConfig({ file: loaded.file, env: io.env, cwd: io.cwd });
      } catch (err) {
        if (err instanceof SpoolshipError) log.error({ problems: err.message }, 'new config rejected; keeping the running one');
      }
      agent.reloadToken().catch((err) => log.warn({ err: String(err) }, 'token reload failed'));
    };
    process.on('SIGTERM', onStop);
    process.on('SIGINT', onStop);
    process.on('SIGHUP', onHup);
    await stopped;
    process.off('SIGTERM', onStop);
    process.off('SIGINT', onStop);
    process.off('SIGHUP', onHup);
    if (fatalError) {
      // A fatal I/O error: leave without writing more state; the next start
      // recovers from what is on disk.
      log.fatal('exiting after a fatal error; the next start recovers from the state_dir');
      return EXIT_FAILURE;
    }
    await agent.close();
    return EXIT_OK;
  },
};
export default command;
