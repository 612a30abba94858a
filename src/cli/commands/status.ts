// `spoolship status [-c FILE] [--json] [--watch]`: progress per Data Source
// and per file, from the running agent's /status, or from the state_dir when
// the agent is down or has no admin endpoint (src/report/collect.ts).
import { loadConfig, NETWORK_KEYS } from '../../config/index.js';
import { EXIT_OK, SpoolshipError } from '../../errors.js';
import { collectStatusRoute } from '../../report/collect.js';
import { renderStatus } from '../../report/render.js';
import { systemClock } from '../../util/clock.js';
import { noteWhereRead, parseCommandArgs, type CliIo, type Command } from '../command.js';

export const WATCH_INTERVAL_MS = 1000;
const CLEAR_SCREEN = '\x1b[H\x1b[2J';

const usage = `Usage: spoolship status [-c FILE] [--json] [--watch]

Show progress per Data Source and per file: lines read and acknowledged,
bytes read / committed / behind (on disk, not yet committed), the queue of
unacknowledged batches, the last error and any parked reason.

The report comes from the running agent's /status at admin.listen when it
answers for this state_dir; otherwise (agent down, admin.listen "" or not
answering) it is read from the state_dir (checkpoint + journal, read-only,
file sizes from disk), and says whether an agent holds the state_dir lock.
Counters that live only in the agent (lines read/acked, last error, parked)
are shown as '-' (null in JSON) then.

Options:
  -c, --config FILE  config file (default: $SPOOLSHIP_CONFIG, ./config/spoolship.yaml,
                     /etc/spoolship/spoolship.yaml)
      --json         print one JSON object (the same as the agent's /status);
                     with --watch, one object per line
      --watch        refresh every second (redrawn in place on a terminal);
                     stop with Ctrl-C
  -h, --help         show this help

Exit codes: 0 ok; 1 the state_dir could not be read; 2 usage or config error.
`;

const command: Command = {
  name: 'status',
  summary: 'show progress per Data Source and file',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs('status', argv, {
      config: { type: 'string', short: 'c' },
      json: { type: 'boolean' },
      watch: { type: 'boolean' },
    });
    // status never uses the API (nor its token), and the config's warnings concern run (but a
    // SPOOLSHIP_* variable that names no key may be a misspelt state dir).
    const loaded = loadConfig({ file: values.config ?? null, env: io.env, cwd: io.cwd, unusedKeys: NETWORK_KEYS });
    const { config, envWarnings } = loaded;
    for (const w of envWarnings) io.stderr.write(`spoolship status: warning: ${w}\n`);
    noteWhereRead('status', loaded, io);
    const frame = async (): Promise<string> => {
      const { report, via } = await collectStatusRoute(config);
      return values.json ? `${JSON.stringify(report)}\n` : renderStatus(report, { color: io.stdout.isTTY === true, via });
    };
    if (!values.watch) {
      io.stdout.write(await frame());
      return EXIT_OK;
    }
    await watch(frame, io);
    return EXIT_OK;
  },
};

/**
 * Redraw until SIGINT, or until the reader goes away (`status --watch | head
 * -1`: the write fails with EPIPE; src/cli.ts keeps that from crashing); a
 * failed read is shown in the frame and retried, not fatal.
 */
async function watch(frame: () => Promise<string>, io: CliIo): Promise<void> {
  const ac = new AbortController();
  const onInterrupt = () => ac.abort();
  const onOutputError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') ac.abort();
  };
  process.on('SIGINT', onInterrupt);
  io.stdout.on('error', onOutputError);
  const tty = io.stdout.isTTY === true;
  try {
    while (!ac.signal.aborted) {
      let text: string;
      try {
        text = await frame();
      } catch (err) {
        if (!(err instanceof SpoolshipError)) throw err;
        text = `spoolship status: ${err.message}\n`;
      }
      if (ac.signal.aborted) break;
      io.stdout.write(tty ? CLEAR_SCREEN + text : `${text}${text.startsWith('{') ? '' : '\n'}`);
      await systemClock.sleep(WATCH_INTERVAL_MS, ac.signal);
    }
  } finally {
    process.off('SIGINT', onInterrupt);
    io.stdout.off('error', onOutputError);
  }
}

export default command;
