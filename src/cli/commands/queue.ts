// `spoolship queue list|dead-letter [-c FILE] [--datasource DS] [ID...] [--json]`:
// the operator's way out of a stuck batch (README "The disk retry queue").
//
// list: every batch waiting in the disk retry queue, read-only (safe beside a
// running agent): a batch of a Data Source (or a budget) the running agent
// reports parked is `parked`, else `queued`.
// dead-letter: moves the named batches (or every batch of a Data Source) to
// the dead-letter store, reason `operator`, on the state_dir of a stopped
// agent: it takes the state lock, so it refuses while the agent runs (this
// release has no control channel to a running agent; stop it, move, start).
import path from 'node:path';
import { decodeBody } from '../../codec/index.js';
import { loadConfig, TOKEN_KEYS } from '../../config/index.js';
import type { Config } from '../../config/types.js';
import { encodeRecord } from '../../deadletter/files.js';
import { DeadLetterStore, deadLetterDir, toRecord, type DeadLetterInput } from '../../deadletter/store.js';
import { EXIT_FAILURE, EXIT_OK, StateLockedError, UsageError } from '../../errors.js';
import { locateLines } from '../../agent/reform.js';
import { RetryQueue } from '../../queue/retry-queue.js';
import { askAgent } from '../../status/collect.js';
import { readQueueRecords, type QueueRecordView } from '../../status/queue-reader.js';
import { acquireLock } from '../../state/lock.js';
import { StateStore } from '../../state/store.js';
import { parseCommandArgs, type CliIo, type Command } from '../command.js';

const usage = `Usage: spoolship queue list        [-c FILE] [--datasource DS] [--json]
       spoolship queue dead-letter [-c FILE] [--datasource DS] [ID...] [--json]

The disk retry queue (<state_dir>/queue) holds batches that could not be sent
yet: an outage, a parked Data Source or budget.

  list         every batch waiting there: id, Data Source, state (queued, or
               parked when the running agent reports its Data Source or budget
               parked), lines, bytes (uncompressed), compressed bytes, age.
               Read-only: safe while the agent runs.
  dead-letter  move the named batches (IDs from list), or every batch of
               --datasource, to the dead-letter store (reason operator), so
               shipping goes on; 'spoolship dead-letter replay' can send them
               later. Needs the agent stopped (it takes the state_dir lock).

Options:
  -c, --config FILE      config file (default: $SPOOLSHIP_CONFIG, ./config/spoolship.yaml,
                         /etc/spoolship/spoolship.yaml)
      --datasource DS    only this Data Source
      --json             list: one JSON object per line; dead-letter: a summary object
  -h, --help             show this help

Exit codes: 0 ok; 1 an unknown ID, a batch that does not fit the dead-letter
store, or the agent is running (nothing moved); 2 usage or config error
(dead-letter with neither IDs nor --datasource).
`;

interface Listed {
  id: number;
  datasource: string;
  state: 'queued' | 'parked';
  lines: number;
  bytes: number;
  compressed_bytes: number;
  age_ms: number;
  attempts: number | null;
  last_status: number | null;
  last_error: string | null;
}

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
    const parsedIds = ids.map((s) => {
      if (!/^\d+$/.test(s)) throw new UsageError(`'${s}' is not a batch id (a number from 'spoolship queue list')`);
      return Number(s);
    });
    if (verb === 'list' && parsedIds.length > 0) throw new UsageError(`queue list takes no IDs; use --datasource to select`);
    if (verb === 'dead-letter' && parsedIds.length === 0 && values.datasource === undefined) {
      throw new UsageError('queue dead-letter needs batch IDs (from queue list) or --datasource DS');
    }
    // The queue commands never use the token, and the config's warnings concern run.
    const { config } = loadConfig({ file: values.config ?? null, env: io.env, cwd: io.cwd, unusedKeys: TOKEN_KEYS });
    return verb === 'list' ? list(config, values.datasource, values.json === true, io) : moveToDeadLetters(config, parsedIds, values.datasource, values.json === true, io);
  },
};

async function list(config: Readonly<Config>, datasource: string | undefined, json: boolean, io: CliIo): Promise<number> {
  const records = (await readQueueRecords(path.join(config.state_dir, 'queue'))).filter((r) => r.header && (datasource === undefined || r.header.ds === datasource));
  const parked = await parkedDataSources(config);
  const now = Date.now();
  const rows: Listed[] = records.map((r) => {
    const h = r.header!;
    return {
      id: h.id,
      datasource: h.ds,
      state: parked.budget || parked.ds.has(h.ds) ? 'parked' : 'queued',
      lines: h.lines,
      bytes: h.rawLen,
      compressed_bytes: r.bodyBytes,
      age_ms: Math.max(0, now - h.queuedAt),
      // Attempts and answers live in the running agent only; not recorded on disk.
      attempts: null,
      last_status: null,
      last_error: null,
    };
  });
  if (json) io.stdout.write(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  else if (rows.length === 0) io.stdout.write(`the retry queue in ${config.state_dir} is empty${datasource ? ` for ${datasource}` : ''}\n`);
  else {
    io.stdout.write(`${'ID'.padEnd(8)} ${'DATASOURCE'.padEnd(24)} ${'STATE'.padEnd(7)} ${'LINES'.padStart(8)} ${'BYTES'.padStart(12)} ${'AGE'.padStart(10)}\n`);
    for (const r of rows) io.stdout.write(`${String(r.id).padEnd(8)} ${r.datasource.padEnd(24)} ${r.state.padEnd(7)} ${String(r.lines).padStart(8)} ${String(r.bytes).padStart(12)} ${`${Math.round(r.age_ms / 1000)} s`.padStart(10)}\n`);
  }
  return EXIT_OK;
}

/** What the running agent reports parked (nothing when it is down or does not answer). */
async function parkedDataSources(config: Readonly<Config>): Promise<{ budget: boolean; ds: Set<string> }> {
  const answer = await askAgent(config).catch(() => null);
  if (!answer || answer.kind !== 'report') return { budget: false, ds: new Set() };
  const r = answer.report;
  const ds = new Set(r.datasources.filter((d) => d.parked !== null).map((d) => d.datasource));
  return { budget: r.agent.reasons.some((x) => x === 'token_rejected' || x === 'workspace_not_found' || x === 'unexpected_response'), ds };
}

async function moveToDeadLetters(config: Readonly<Config>, ids: number[], datasource: string | undefined, json: boolean, io: CliIo): Promise<number> {
  const queueDir = path.join(config.state_dir, 'queue');
  let lock;
  try {
    lock = await acquireLock(config.state_dir);
  } catch (err) {
    if (err instanceof StateLockedError) {
      io.stderr.write(`spoolship queue dead-letter: the agent (pid ${err.holderPid ?? 'unknown'}) is running on ${config.state_dir}; stop it, move the batches, then start it again (nothing moved)\n`);
      return EXIT_FAILURE;
    }
    throw err;
  }
  try {
    const records = await readQueueRecords(queueDir);
    const selected = records.filter((r) => r.header && (ids.length > 0 ? ids.includes(r.header.id) : r.header.ds === datasource) && (datasource === undefined || r.header.ds === datasource));
    const known = new Set(records.map((r) => r.header?.id));
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      io.stderr.write(`spoolship queue dead-letter: no queued batch ${unknown.join(', ')} (see 'spoolship queue list'); nothing moved\n`);
      return EXIT_FAILURE;
    }
    const store = await StateStore.open({ stateDir: config.state_dir, now: () => Date.now(), onBackgroundError: () => undefined });
    const queue = await RetryQueue.open(queueDir, config.queue.max_bytes, () => undefined);
    const dead = new DeadLetterStore(deadLetterDir(config.state_dir), config.dead_letter.max_bytes, () => new Date(), () => undefined);
    await dead.open();
    try {
      // Everything is read and sized first: a batch that does not fit moves nothing.
      const moves: Array<{ rec: QueueRecordView; inputs: DeadLetterInput[] }> = [];
      for (const rec of selected) moves.push({ rec, inputs: await linesOf(rec, queue, store) });
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
      const summary = { moved_batches: moves.length, moved_lines: moves.reduce((n, m) => n + m.inputs.length, 0) };
      io.stdout.write(json ? `${JSON.stringify(summary)}\n` : `moved ${summary.moved_batches} batch(es), ${summary.moved_lines} line(s) to the dead-letter store\n`);
      return EXIT_OK;
    } finally {
      await queue.close();
      await store.close();
    }
  } finally {
    await lock.release();
  }
}

/** The lines of a queued batch, as dead-letter inputs with their file and offset when the state knows them. */
async function linesOf(rec: QueueRecordView, queue: RetryQueue, store: StateStore): Promise<DeadLetterInput[]> {
  const batch = await queue.readRecord({ seg: rec.seg, off: rec.off });
  if (!batch) throw new Error(`queued batch ${rec.header!.id} cannot be read (damaged); start the agent: it reads such a batch again from the spool`);
  const raw = batch.header.encoding ? await decodeBody(batch.header.encoding, batch.body) : batch.body;
  const lines: Buffer[] = [];
  for (let pos = 0; pos < raw.length; ) {
    const nl = raw.indexOf(10, pos);
    const end = nl === -1 ? raw.length : nl;
    lines.push(raw.subarray(pos, end));
    pos = end + 1;
  }
  const q = store.queuedIntents().find((x) => x.id === batch.header.id);
  const pathOf = (k: string) => store.progress.files.get(k)?.meta.path;
  const where = q ? await locateLines(q.ranges, pathOf, 0, lines.length) : [];
  return lines.map((line, i) => ({
    datasource: batch.header.ds,
    reason: 'operator' as const,
    file: where[i]?.file ?? null,
    offset: where[i]?.offset ?? null,
    bytes: line.length,
    status: null,
    line,
  }));
}

export default command;
