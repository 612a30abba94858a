// `spoolship queue list|dead-letter [-c FILE] [--datasource DS] [ID...] [--json]`:
// the operator's way out of a stuck batch (README "The disk retry queue").
//
// With the agent running, both ask it through the control channel in
// state_dir (src/control/): it lists the batches queued on disk or held by a
// park, with their attempts and last answer, and moves batches while it
// runs. With the agent stopped they work on its state_dir directly (taking
// the state lock): every batch there is `queued`.
import path from 'node:path';
import { decodeBody } from '../../codec/index.js';
import { loadConfig, NETWORK_KEYS } from '../../config/index.js';
import type { Config } from '../../config/types.js';
import { encodeRecord } from '../../deadletter/files.js';
import { DeadLetterStore, deadLetterDir, toRecord, type DeadLetterInput } from '../../deadletter/store.js';
import { ControlUntrustedError, EXIT_FAILURE, EXIT_OK, SpoolshipError, StateLockedError, UsageError, fsErrorMessage } from '../../errors.js';
import { segmentFile, type AcksDamagedHandler } from '../../queue/format.js';
import { deadLetterInputs } from '../../deadletter/from-batch.js';
import { RetryQueue } from '../../queue/retry-queue.js';
import { askControl } from '../../control/client.js';
import { printable } from '../../util/printable.js';
import type { ControlAnswer, ControlRequest, QueueRow } from '../../control/protocol.js';
import { readQueueRecords, type QueueRecordView } from '../../report/queue-reader.js';
import { acquireLock } from '../../state/lock.js';
import { stateLockMessage } from '../../observe/state-events.js';
import { StateStore } from '../../state/store.js';
import { relocateFiles } from '../../spool/relocate.js';
import { noteWhereRead, parseCommandArgs, stateDirToWrite, type CliIo, type Command } from '../command.js';

const usage = `Usage: spoolship queue list        [-c FILE] [--datasource DS] [--json]
       spoolship queue dead-letter [-c FILE] [--datasource DS] [ID...] [--json]

Batches that could not be sent yet (an outage, a parked Data Source or
budget) wait in the disk retry queue (<state_dir>/queue), or in the running
agent while their Data Source is parked.

  list         every such batch: id, Data Source, state (queued, or parked
               while its Data Source or the budget is parked), lines, bytes
               (uncompressed), compressed bytes, age, and from a running
               agent its attempts and last answer.
  dead-letter  move the named batches (IDs from list), or every batch of
               --datasource, to the dead-letter store (reason operator), so
               shipping goes on; 'spoolship dead-letter replay' can send them
               later.

Both work with the agent running (through its control socket,
<state_dir>/control.sock: run them as the agent's user) or stopped (on the
state_dir directly).

Options:
  -c, --config FILE      config file (default: $SPOOLSHIP_CONFIG, ./config/spoolship.yaml,
                         /etc/spoolship/spoolship.yaml)
      --datasource DS    only this Data Source
      --json             list: one JSON object per line; dead-letter: a summary object
  -h, --help             show this help

Exit codes: 0 ok; 1 an unknown ID or a batch that does not fit the
dead-letter store (nothing moved), or the agent cannot be reached; 2 usage or
config error (dead-letter with neither IDs nor --datasource).
`;

/** List answers are quick; a move may wait for a request on the wire (api.request_timeout_ms). */
const LIST_TIMEOUT_MS = 30_000;
const MOVE_TIMEOUT_MS = 10 * 60_000;

const command: Command = {
  name: 'queue',
  summary: 'list the disk retry queue, or move stuck batches to dead letters',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs('queue', argv, { config: { type: 'string', short: 'c' }, datasource: { type: 'string' }, json: { type: 'boolean' } }, true);
    const [verb, ...ids] = positionals;
    if (verb !== 'list' && verb !== 'dead-letter') {
      throw new UsageError(`${verb === undefined ? 'missing verb' : `unknown verb '${verb}'`}: use 'queue list' or 'queue dead-letter'; see 'spoolship queue --help'`);
    }
    if (verb === 'list' && ids.length > 0) throw new UsageError(`queue list takes no IDs; use --datasource to select`);
    if (verb === 'dead-letter' && ids.length === 0 && values.datasource === undefined) {
      throw new UsageError('queue dead-letter needs batch IDs (from queue list) or --datasource DS');
    }
    // An ID that is not a number names no batch: refused as an unknown ID is (exit 1, nothing moved).
    const notIds = ids.filter((s) => !/^\d+$/.test(s));
    if (notIds.length > 0) {
      io.stderr.write(`spoolship queue dead-letter: no queued or parked batch ${notIds.map((s) => `'${s}'`).join(', ')} (batch ids are the numbers 'spoolship queue list' shows); nothing moved\n`);
      return EXIT_FAILURE;
    }
    const parsedIds = ids.map(Number);
    // The queue commands never use the token, and the config's warnings concern
    // run (but a SPOOLSHIP_* variable that names no key may be a misspelt state dir).
    const loaded = loadConfig({ file: values.config ?? null, env: io.env, cwd: io.cwd, unusedKeys: NETWORK_KEYS });
    const { config, envWarnings } = loaded;
    for (const w of envWarnings) io.stderr.write(`spoolship queue: warning: ${w}\n`);
    noteWhereRead('queue', loaded, io);
    const json = values.json === true;
    const req: ControlRequest = verb === 'list' ? { op: 'queue_list', datasource: values.datasource } : { op: 'queue_dead_letter', ids: parsedIds, datasource: values.datasource };
    const answer = await askRunningAgent(config, req, io);
    if (answer === 'failed') return EXIT_FAILURE;
    if (answer) return verb === 'list' ? printList(config, 'rows' in answer ? answer.rows : [], values.datasource, json, io) : printMoves(answer, json, io);
    return verb === 'list' ? list(config, values.datasource, json, io) : moveToDeadLetters(config, parsedIds, values.datasource, json, io);
  },
};

/** The running agent's answer; null when no agent runs on the state_dir; 'failed' after a refusal (printed). */
async function askRunningAgent(config: Readonly<Config>, req: ControlRequest, io: CliIo): Promise<Exclude<ControlAnswer, { ok: false }> | null | 'failed'> {
  let answer: ControlAnswer | null;
  try {
    answer = await askControl(config.state_dir, req, req.op === 'queue_list' ? LIST_TIMEOUT_MS : MOVE_TIMEOUT_MS);
  } catch (err) {
    if (err instanceof ControlUntrustedError) throw err;
    io.stderr.write(`spoolship queue: ${fsErrorMessage(err) ?? (err as Error).message}\n`);
    return 'failed';
  }
  if (answer && !answer.ok) {
    io.stderr.write(`spoolship queue ${req.op === 'queue_list' ? 'list' : 'dead-letter'}: ${answer.error}\n`);
    return 'failed';
  }
  return answer;
}

function printMoves(answer: Exclude<ControlAnswer, { ok: false }>, json: boolean, io: CliIo): number {
  if (!('moved_batches' in answer)) return EXIT_FAILURE;
  for (const b of answer.batches) io.stderr.write(`spoolship queue dead-letter: moved batch ${b.id} (${printable(b.datasource)}, ${b.lines} lines) to the dead-letter store, reason operator\n`);
  const summary = { moved_batches: answer.moved_batches, moved_lines: answer.moved_lines };
  io.stdout.write(json ? `${JSON.stringify(summary)}\n` : `moved ${summary.moved_batches} batch(es), ${summary.moved_lines} line(s) to the dead-letter store\n`);
  return EXIT_OK;
}

/** acks.log holds damaged records (a stopped agent's state_dir): said on stderr, as the agent says it at its start. */
function acksDamaged(io: CliIo): AcksDamagedHandler {
  return (file, ranges) =>
    io.stderr.write(
      `spoolship queue: warning: ${file}: damaged acknowledgement records (bytes ${ranges.map((r) => `${r.start}-${r.end}`).join(', ')}): ` +
        'a batch listed may have been acknowledged already, and sending it again may store it twice\n',
    );
}

/**
 * Every record of a stopped agent's queue, CRC-checked; each damaged one is
 * a warning naming its segment file (it is not listed, nor moved).
 */
async function checkedRecords(queueDir: string, io: CliIo): Promise<QueueRecordView[]> {
  const records = await readQueueRecords(queueDir, { verify: true, onAcksDamaged: acksDamaged(io) });
  for (const r of records.filter((x) => !x.header)) {
    io.stderr.write(
      `spoolship queue: warning: ${segmentFile(queueDir, r.seg)}: a damaged record at offset ${r.off} (its batch cannot be read; not listed): ` +
        'the agent reads its lines again from the spool at its start, or counts them lost with an ERROR\n',
    );
  }
  return records;
}

/** The state_dir of a stopped agent: every batch there is queued. */
async function list(config: Readonly<Config>, datasource: string | undefined, json: boolean, io: CliIo): Promise<number> {
  const records = (await checkedRecords(path.join(config.state_dir, 'queue'), io)).filter((r) => r.header && (datasource === undefined || r.header.ds === datasource));
  const now = Date.now();
  const rows: QueueRow[] = records.map((r) => {
    const h = r.header!;
    return {
      id: h.id,
      datasource: h.ds,
      state: 'queued',
      lines: h.lines,
      bytes: h.rawLen,
      compressed_bytes: r.bodyBytes,
      age_ms: Math.max(0, now - h.queuedAt),
      // As the record kept them when it was queued (unknown for records of older releases).
      attempts: h.history?.attempts ?? null,
      last_status: h.history?.lastStatus ?? null,
      last_error: h.history?.lastError ?? null,
    };
  });
  return printList(config, rows, datasource, json, io);
}

function printList(config: Readonly<Config>, rows: QueueRow[], datasource: string | undefined, json: boolean, io: CliIo): number {
  if (json) io.stdout.write(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  else if (rows.length === 0) io.stdout.write(`no batch is queued or parked in ${config.state_dir}${datasource ? ` for ${datasource}` : ''}\n`);
  else {
    io.stdout.write(`${'ID'.padEnd(8)} ${'DATASOURCE'.padEnd(24)} ${'STATE'.padEnd(7)} ${'LINES'.padStart(8)} ${'BYTES'.padStart(12)} ${'AGE'.padStart(10)} ${'ATTEMPTS'.padStart(8)}  LAST ANSWER\n`);
    for (const r of rows) {
      // A server's error text and the agent's answer are from outside: no escape sequence reaches the terminal.
      const last = printable(r.last_error ?? (r.last_status !== null ? `HTTP ${r.last_status}` : '-'));
      io.stdout.write(
        `${String(r.id).padEnd(8)} ${printable(r.datasource).padEnd(24)} ${r.state.padEnd(7)} ${String(r.lines).padStart(8)} ${String(r.bytes).padStart(12)} ${`${Math.round(r.age_ms / 1000)} s`.padStart(10)} ${String(r.attempts ?? '-').padStart(8)}  ${last}\n`,
      );
    }
  }
  return EXIT_OK;
}

async function moveToDeadLetters(config: Readonly<Config>, ids: number[], datasource: string | undefined, json: boolean, io: CliIo): Promise<number> {
  // Judged as the agent judges it before anything is read or written there;
  // one that does not exist holds no batch, and is not created.
  if (!(await stateDirToWrite(config.state_dir, 'queue dead-letter', io))) return ids.length > 0 ? noSuchBatch(ids, io) : printMoved(0, 0, json, io);
  const queueDir = path.join(config.state_dir, 'queue');
  let lock;
  try {
    lock = await acquireLock(config.state_dir, { onEvent: (e) => io.stderr.write(`spoolship queue dead-letter: note: ${stateLockMessage(e)}\n`) });
  } catch (err) {
    if (err instanceof StateLockedError) {
      io.stderr.write(`spoolship queue dead-letter: the agent (pid ${err.holderPid ?? 'unknown'}) holds ${config.state_dir} but does not answer on its control socket (an older spoolship?); stop it, move the batches, then start it again (nothing moved)\n`);
      return EXIT_FAILURE;
    }
    throw err;
  }
  try {
    const records = await checkedRecords(queueDir, io);
    const selected = records.filter((r) => r.header && (ids.length > 0 ? ids.includes(r.header.id) : r.header.ds === datasource) && (datasource === undefined || r.header.ds === datasource));
    const known = new Set(records.map((r) => r.header?.id));
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) return noSuchBatch(unknown, io);
    const store = await StateStore.open({ stateDir: config.state_dir, now: () => Date.now(), onBackgroundError: () => undefined, relocate: relocateFiles });
    const queue = await RetryQueue.open(queueDir, config.queue.max_bytes, () => undefined);
    const dead = new DeadLetterStore(deadLetterDir(config.state_dir), config.dead_letter.max_bytes, () => new Date(), () => undefined);
    await dead.open();
    try {
      // Everything is read and sized first: a batch that does not fit moves nothing.
      const moves: Array<{ rec: QueueRecordView; inputs: DeadLetterInput[] }> = [];
      for (const rec of selected) moves.push({ rec, inputs: await linesOf(rec, queue, store, queueDir) });
      const need = moves.reduce((n, m) => n + m.inputs.reduce((k, i) => k + Buffer.byteLength(encodeRecord(toRecord(i, new Date()))) + 1, 0), 0);
      if (dead.bytes + need > config.dead_letter.max_bytes) {
        io.stderr.write(`spoolship queue dead-letter: the batches need ${need} bytes and the dead-letter store has ${Math.max(0, config.dead_letter.max_bytes - dead.bytes)} left (dead_letter.max_bytes); nothing moved\n`);
        return EXIT_FAILURE;
      }
      for (const m of moves) {
        for (const input of m.inputs) await dead.add(input);
        await dead.flush();
        store.completeQueued(m.rec.header!.id);
        await store.flush();
        await queue.ack({ seg: m.rec.seg, off: m.rec.off });
        io.stderr.write(`spoolship queue dead-letter: moved batch ${m.rec.header!.id} (${m.rec.header!.ds}, ${m.inputs.length} lines) to the dead-letter store, reason operator\n`);
      }
      return printMoved(moves.length, moves.reduce((n, m) => n + m.inputs.length, 0), json, io);
    } finally {
      await queue.close();
      await store.close();
    }
  } finally {
    await lock.release();
  }
}

function noSuchBatch(ids: number[], io: CliIo): number {
  io.stderr.write(`spoolship queue dead-letter: no queued batch ${ids.join(', ')} (see 'spoolship queue list'); nothing moved\n`);
  return EXIT_FAILURE;
}

function printMoved(batches: number, lines: number, json: boolean, io: CliIo): number {
  const summary = { moved_batches: batches, moved_lines: lines };
  io.stdout.write(json ? `${JSON.stringify(summary)}\n` : `moved ${summary.moved_batches} batch(es), ${summary.moved_lines} line(s) to the dead-letter store\n`);
  return EXIT_OK;
}

/** The lines of a queued batch, as dead-letter inputs with their file and offset when the state knows them. */
async function linesOf(rec: QueueRecordView, queue: RetryQueue, store: StateStore, queueDir: string): Promise<DeadLetterInput[]> {
  const batch = await queue.readRecord({ seg: rec.seg, off: rec.off });
  if (!batch) {
    throw new SpoolshipError(
      'SPOOLSHIP_ERR_QUEUE_RECORD_DAMAGED',
      `queued batch ${rec.header!.id} cannot be read: its record in ${segmentFile(queueDir, rec.seg)} (offset ${rec.off}) is damaged; nothing moved. Start the agent: it reads its lines again from the spool, or counts them lost with an ERROR`,
      EXIT_FAILURE,
    );
  }
  const raw = batch.header.encoding ? await decodeBody(batch.header.encoding, batch.body) : batch.body;
  const q = store.queuedIntents().find((x) => x.id === batch.header.id);
  return deadLetterInputs(batch.header.ds, [{ lineStart: 0, raw }], 'operator', batch.header.history?.lastStatus ?? null, q?.ranges, (k) => store.metaOf(k)?.path);
}

export default command;
