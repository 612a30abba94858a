// `spoolship dead-letter list|replay|purge [-c FILE] [--datasource DS] [--reason R] [--json]`:
// inspect the dead-letter store, and resend its lines once the cause is fixed
// (the replay sequence and its crash safety: src/deadletter/replay.ts).
import { loadConfig, NETWORK_KEYS, ONE_SHOT_UNUSED_KEYS } from '../../config/index.js';
import { askControl } from '../../control/client.js';
import type { Config } from '../../config/types.js';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../../errors.js';
import { DEAD_LETTER_REASONS, listDeadLetterFiles, listDeadLetters, specRecord, type Filter, type Listing } from '../../deadletter/files.js';
import { renderList, renderSummary, STOP_MESSAGES } from '../../deadletter/render.js';
import { countSelected, purgeDeadLetters } from '../../deadletter/purge.js';
import { replayDeadLetters } from '../../deadletter/replay.js';
import { stateLockMessage } from '../../observe/state-events.js';
import { confirm } from '../../clusters/confirm.js';
import { createReplaySender } from '../../deadletter/replay-sender.js';
import { inFlightCeiling } from '../../sender/from-config.js';
import { deadLetterDir } from '../../deadletter/store.js';
import { noteWhereRead, parseCommandArgs, stateDirToWrite, type CliIo, type Command } from '../command.js';

const usage = `Usage: spoolship dead-letter list   [-c FILE] [--datasource DS] [--reason R] [--json]
       spoolship dead-letter replay [-c FILE] [--datasource DS] [--reason R] [--json]
       spoolship dead-letter purge  [-c FILE] [--datasource DS] [--reason R] [--yes] [--json]

Lines that could not be delivered as they are wait in the dead-letter store
(<state_dir>/dead-letter/<datasource>.ndjson) with the reason:
line_too_long, invalid_json, rejected (400), materialized_view_error (422).

  list    print the records: a table, or with --json one JSON object per line
          (datasource, reason, file, offset, bytes, at, status, and line or
          line_base64 when the line is not UTF-8)
  replay  resend the selected lines through the same sender as the agent
          (batches, retries, 400 bisection). Acknowledged records are removed;
          a line rejected again stays, with the new answer. Safe while the
          agent runs. 401/403/404 stop the replay at once and keep everything.
          Ctrl-C stops it; records not acknowledged are kept.
  purge   remove the selected records for good (asks on a terminal; --yes
          otherwise). Safe while the agent runs.

Options:
  -c, --config FILE      config file (default: $SPOOLSHIP_CONFIG, ./config/spoolship.yaml,
                         /etc/spoolship/spoolship.yaml)
      --datasource DS    only this Data Source
      --reason R         only this reason (filters combine)
      --json             list: JSON lines; replay, purge: the summary as one JSON object
      --yes              purge without asking (needed without a terminal)
  -h, --help             show this help

Exit codes: 0 ok (replay: every selected record acknowledged, or none
selected); 1 replay left records behind (rejected again, not sent, token or
host rejected); 2 usage or config error (nothing was done).
`;

const command: Command = {
  name: 'dead-letter',
  summary: 'list or replay rejected lines',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      'dead-letter',
      argv,
      {
        config: { type: 'string', short: 'c' },
        datasource: { type: 'string' },
        reason: { type: 'string' },
        json: { type: 'boolean' },
        yes: { type: 'boolean' },
      },
      true,
    );
    const [verb, ...extra] = positionals;
    if (verb !== 'list' && verb !== 'replay' && verb !== 'purge') {
      throw new UsageError(`${verb === undefined ? 'missing verb' : `unknown verb '${verb}'`}: use 'dead-letter list', 'replay' or 'purge'; see 'spoolship dead-letter --help'`);
    }
    if (verb === 'purge' && values.yes !== true && io.stdin.isTTY !== true) {
      throw new UsageError('purge removes records for good: without a terminal to ask on, pass --yes');
    }
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'; see 'spoolship dead-letter --help'`);
    const filter = parseFilter(values.datasource, values.reason);
    // list and purge never use the API nor its token (replay does), and the config's
    // warnings concern run (but a SPOOLSHIP_* variable that names no key may be
    // a misspelt state dir).
    const loaded = loadConfig({
      file: values.config ?? null,
      env: io.env,
      cwd: io.cwd,
      unusedKeys: verb === 'replay' ? ONE_SHOT_UNUSED_KEYS : NETWORK_KEYS,
      tokenRequired: verb === 'replay',
      onWarning: verb === 'replay' ? (w) => io.stderr.write(`spoolship dead-letter: warning: ${w}\n`) : undefined,
    });
    const { config, envWarnings } = loaded;
    if (verb !== 'replay') for (const w of envWarnings) io.stderr.write(`spoolship dead-letter: warning: ${w}\n`);
    if (verb !== 'replay') noteWhereRead('dead-letter', loaded, io);
    if (verb === 'purge') return purge(config, filter, values.json === true, values.yes === true, io);
    return verb === 'list' ? list(config, filter, values.json === true, io) : replay(config, filter, values.json === true, io);
  },
};

function parseFilter(datasource: string | undefined, reason: string | undefined): Filter {
  if (datasource !== undefined && (datasource === '' || /[/\\]|^\.\.?$/.test(datasource))) {
    throw new UsageError(`--datasource ${JSON.stringify(datasource)} is not a Data Source name`);
  }
  if (reason !== undefined && !(DEAD_LETTER_REASONS as readonly string[]).includes(reason)) {
    throw new UsageError(`--reason ${JSON.stringify(reason)} is not a dead-letter reason; use one of ${DEAD_LETTER_REASONS.join(', ')}`);
  }
  return { datasource, reason };
}

/** Lines of the store that are no records (a CRC that does not match, a write torn by a crash): kept, never listed nor replayed, and said. */
function warnUnreadable(unreadable: Listing['unreadable'], io: CliIo): void {
  for (const u of unreadable) {
    io.stderr.write(
      `spoolship dead-letter: warning: ${u.file}: ${u.lines} unreadable line(s) (damaged: a CRC that does not match, or a write torn by a crash); kept, never listed, replayed nor purged\n`,
    );
  }
}

async function list(config: Readonly<Config>, filter: Filter, json: boolean, io: CliIo): Promise<number> {
  const dir = deadLetterDir(config.state_dir);
  const { records, unreadable } = await listDeadLetters(dir, filter);
  warnUnreadable(unreadable, io);
  const leftovers = (await listDeadLetterFiles(dir, filter.datasource)).filter((f) => f.replaying);
  for (const f of leftovers) io.stderr.write(`spoolship dead-letter: note: ${f.path} is held by a running or interrupted replay; its records are listed, and the next replay resends them\n`);
  if (json) {
    io.stdout.write(records.map((r) => `${JSON.stringify(specRecord(r))}\n`).join(''));
  } else if (records.length === 0) {
    io.stdout.write(`no dead letters${describeFilter(filter)} in ${dir}\n`);
  } else {
    io.stdout.write(renderList(records, { color: io.stdout.isTTY === true }));
  }
  return EXIT_OK;
}

async function replay(config: Readonly<Config>, filter: Filter, json: boolean, io: CliIo): Promise<number> {
  if (config.api.base_url === 'embedded') {
    throw new UsageError(
      "api.base_url is 'embedded': the embedded emulator lives inside a running agent, so replay has nowhere to send; set api.base_url (and api.token) to the Events API or a 'spoolship emulator', then run replay again",
    );
  }
  // Judged as the agent judges it before a record is read: another user's
  // state_dir may hold lines planted for this user's token to carry. One that
  // does not exist holds none, and is not created.
  await stateDirToWrite(config.state_dir, 'dead-letter replay', io);
  warnUnreadable((await listDeadLetters(deadLetterDir(config.state_dir), filter)).unreadable, io);
  const say = (msg: string) => io.stderr.write(`spoolship dead-letter replay: ${msg}\n`);
  const sender = await createReplaySender(config, io.env, {
    onRetry: (reason, ds, cause) => say(`retrying (${reason}${cause ? `: ${cause}` : ''}) for Data Source ${ds}; Ctrl-C stops and keeps the records`),
    onStop: (reason, scope) => say(`${STOP_MESSAGES[reason]}${scope !== 'budget' && scope !== 'replay' ? ` (${scope})` : ''}`),
  });
  // SIGTERM as Ctrl-C (systemd, Kubernetes, timeout(1)): stop, keep the records, print the summary.
  const onInterrupt = () => sender.stop('interrupted');
  process.on('SIGINT', onInterrupt);
  process.on('SIGTERM', onInterrupt);
  try {
    const summary = await replayDeadLetters({
      dir: deadLetterDir(config.state_dir),
      filter,
      maxBatchBytes: config.batch.max_bytes,
      concurrency: inFlightCeiling(config),
      sender,
      now: () => new Date(),
      onLockEvent: (e) => say(`note: ${stateLockMessage(e)}`),
    });
    io.stdout.write(json ? `${JSON.stringify(summary)}\n` : renderSummary(summary));
    if (summary.acknowledged > 0) await tellAgent(config, io);
    if (summary.skipped_truncated > 0) {
      say(
        `${summary.skipped_truncated} record(s) can never be replayed: line_too_long records keep only the first spool.max_line_bytes bytes of the line (their file and offset say where the whole line was); they are kept. 'spoolship send' with this config would dead-letter them again: to ship one, raise spool.max_line_bytes and batch.max_bytes above its bytes in a copy of the config, within your plan's request limit (10 MB, 100 MB on paid plans; a longer line cannot be shipped), and send the whole line from the spool with it (tail -c +<offset + 1> <file> | head -n 1 | spoolship send -c <copy> -d <datasource>). Then, or to give the lines up, remove the records with 'spoolship dead-letter purge --reason line_too_long'`,
      );
    }
    // Records that can never be replayed do not make every replay fail: they are reported above. An
    // interruption after every selected record was acknowledged leaves nothing to replay: exit 0 too.
    const allAcked = summary.acknowledged === summary.selected - summary.skipped_truncated;
    return allAcked && (summary.stopped === null || (summary.stopped === 'interrupted' && summary.remaining <= summary.skipped_truncated)) ? EXIT_OK : EXIT_FAILURE;
  } finally {
    process.off('SIGINT', onInterrupt);
    process.off('SIGTERM', onInterrupt);
    await sender.close();
  }
}

async function purge(config: Readonly<Config>, filter: Filter, json: boolean, yes: boolean, io: CliIo): Promise<number> {
  const dir = deadLetterDir(config.state_dir);
  // Judged as the agent judges it before a record is removed: in another
  // user's state_dir the files could be links placed for root to rewrite.
  await stateDirToWrite(config.state_dir, 'dead-letter purge', io);
  warnUnreadable((await listDeadLetters(dir, filter)).unreadable, io);
  if (!yes) {
    const n = await countSelected(dir, filter);
    if (n === 0) {
      io.stdout.write(json ? `${JSON.stringify({ removed: 0 })}\n` : `no dead letters${describeFilter(filter)} in ${dir}\n`);
      return EXIT_OK;
    }
    if (!(await confirm(`remove ${n} dead letter(s)${describeFilter(filter)} from ${dir} for good?`, io.stdin, io.stderr))) {
      io.stderr.write('spoolship dead-letter purge: nothing removed\n');
      return EXIT_OK;
    }
  }
  const summary = await purgeDeadLetters(dir, filter, (e) => io.stderr.write(`spoolship dead-letter purge: note: ${stateLockMessage(e)}\n`));
  io.stdout.write(json ? `${JSON.stringify(summary)}\n` : `removed ${summary.removed} dead letter(s)${describeFilter(filter)}\n`);
  if (summary.removed > 0) await tellAgent(config, io);
  return EXIT_OK;
}

/**
 * A running agent counts the dead-letter store's bytes against
 * dead_letter.max_bytes: tell it records were removed, so a store that was
 * full takes dead letters again at once. No agent running: nothing to tell.
 */
async function tellAgent(config: Readonly<Config>, io: CliIo): Promise<void> {
  try {
    await askControl(config.state_dir, { op: 'dead_letters_changed' }, 10_000);
  } catch (err) {
    io.stderr.write(`spoolship dead-letter: warning: the running agent was not told that records were removed (${(err as Error).message}); it counts the store again when it restarts\n`);
  }
}

function describeFilter(f: Filter): string {
  const parts = [f.datasource !== undefined ? `datasource ${f.datasource}` : null, f.reason !== undefined ? `reason ${f.reason}` : null].filter(Boolean);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

export default command;
