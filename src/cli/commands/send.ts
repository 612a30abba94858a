import { createReadStream, statSync } from 'node:fs';
import path from 'node:path';
import { startEmbedded } from '../../emulator/embedded.js';
import { apiBaseUrl, loadConfig, ONE_SHOT_UNUSED_KEYS } from '../../config/index.js';
import { DeadLetterStore, deadLetterDir } from '../../deadletter/store.js';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../../errors.js';
import { createLogger } from '../../log.js';
import { EMBEDDED_NETWORK, readNetworkSetup } from '../../net/setup.js';
import { runSend, type SendInput, type SendSummary } from '../../one-shot/send.js';
import { ProgressDisplay } from '../../one-shot/progress.js';
import { isDataSourceName } from '../../util/datasource-name.js';
import { parseCommandArgs, type CliIo, type Command } from '../command.js';

const usage = `Usage: spoolship send -d DATASOURCE [FILE... | -] [-c FILE] [--json]

Ship NDJSON files (or stdin, with "-" or no FILE) to a Data Source once,
through the same batching, compression and retry code as 'spoolship run'.
Keeps no checkpoint. Lines the API rejects go to the dead-letter store of
state_dir ('spoolship dead-letter list').

Options:
  -d, --datasource NAME  target Data Source (required)
  -c, --config FILE      config file (api, batch, compression, limits, retry)
      --json             print the summary as JSON on stdout

Exit codes: 0 every line acknowledged; 1 a line was dead-lettered, or the
token/host was rejected (401/403/404: stops at once); 2 usage or config error.
`;

function inputsFrom(files: string[], io: CliIo): SendInput[] {
  if (files.length === 0) files = ['-'];
  return files.map((f) => {
    if (f === '-') return { name: '-', size: null, open: () => io.stdin as AsyncIterable<Buffer> };
    const abs = path.resolve(io.cwd, f);
    let st;
    try {
      st = statSync(abs);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new UsageError(`cannot read ${f}: ${code === 'ENOENT' ? 'no such file' : (code ?? String(err))} (give NDJSON files, or - for stdin)`);
    }
    if (!st.isFile()) throw new UsageError(`cannot read ${f}: it is ${st.isDirectory() ? 'a directory' : 'not a regular file'} (give NDJSON files, or - for stdin)`);
    const size = st.size;
    return { name: abs, size, open: () => createReadStream(abs, { highWaterMark: 1024 * 1024 }) };
  });
}

function printSummary(s: SendSummary, io: CliIo, json: boolean): void {
  if (json) {
    io.stdout.write(`${JSON.stringify(s)}\n`);
    return;
  }
  const dead = Object.entries(s.lines_dead_lettered).map(([r, n]) => `${n} ${r}`).join(', ') || '0';
  const reqs = Object.entries(s.requests).map(([st, n]) => `${n}x${st}`).join(' ') || 'none';
  io.stderr.write(
    [
      `send ${s.ok ? 'done' : 'FAILED'}: ${s.datasource}`,
      `  lines read ${s.lines_read}, acknowledged ${s.lines_acked} (${s.rows_quarantined} quarantined by the platform), dead-lettered ${dead}${s.lines_lost > 0 ? `, lost ${s.lines_lost} (the dead-letter store was full)` : ''}`,
      `  requests ${reqs}; ${(s.bytes_read / 1e6).toFixed(2)} MB read, ${(s.bytes_sent / 1e6).toFixed(2)} MB sent in ${s.seconds.toFixed(1)} s`,
      ...(s.error ? [`  error: ${s.error}`] : []),
      '',
    ].join('\n'),
  );
}

const command: Command = {
  name: 'send',
  summary: 'ship files or stdin once, then exit',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(
      'send',
      argv,
      { datasource: { type: 'string', short: 'd' }, config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
      true,
    );
    const ds = values.datasource;
    if (!ds) throw new UsageError("missing -d DATASOURCE; see 'spoolship send --help'");
    if (!isDataSourceName(ds)) throw new UsageError(`-d ${JSON.stringify(ds)}: a Data Source name is letters, digits and _ , not starting with a digit, at most 255 characters`);
    const inputs = inputsFrom(positionals, io);
    const loaded = loadConfig({ file: values.config ?? null, env: io.env, cwd: io.cwd, tokenRequired: true, unusedKeys: ONE_SHOT_UNUSED_KEYS });
    for (const w of loaded.envWarnings) io.stderr.write(`spoolship send: warning: ${w}\n`);
    const c = loaded.config;
    const log = createLogger({ ...c.log, level: 'warn' }, io.stderr);
    let baseUrl = apiBaseUrl(c);
    let token = c.api.token ?? '';
    const embedded = baseUrl === 'embedded' ? await startEmbedded(c.state_dir) : null;
    if (embedded) {
      baseUrl = embedded.url;
      token = embedded.token;
    } else if (c.api.token_file) {
      const { readRegularFile, MAX_SECRET_FILE_BYTES } = await import('../../util/bounded-read.js');
      token = (await readRegularFile(c.api.token_file, MAX_SECRET_FILE_BYTES)).toString('utf8').trim();
    }
    if (!token) throw new UsageError('no API token: set api.token (or SPOOLSHIP_TOKEN), or api.token_file');
    const network = embedded ? EMBEDDED_NETWORK : await readNetworkSetup(c, baseUrl, io.env);
    const deadLetters = new DeadLetterStore(deadLetterDir(c.state_dir), c.dead_letter.max_bytes, () => new Date(), (input, firstOfStretch) => {
      if (firstOfStretch) log.error({ event: 'dead_letter_full', datasource: input.datasource, max_bytes: c.dead_letter.max_bytes }, 'dead-letter store full: lines for it are dropped (lost; the summary counts them in lines_lost); raise dead_letter.max_bytes, or replay or purge it');
    });
    await deadLetters.open();
    const total = inputs.every((i) => i.size !== null) ? inputs.reduce((a, i) => a + (i.size ?? 0), 0) : null;
    let live: SendSummary | null = null;
    let done = 0;
    let retrying: string | null = null;
    const display = new ProgressDisplay(io.stderr, () => ({
      bytesRead: live?.bytes_read ?? 0,
      bytesDone: done,
      totalBytes: total,
      linesAcked: live?.lines_acked ?? 0,
      linesDeadLettered: Object.values(live?.lines_dead_lettered ?? {}).reduce((a, b) => a + b, 0),
      retrying,
    }));
    display.start();
    // Ctrl-C: stop sending, then the summary (exit 1); a second one ends the process at once.
    const interrupt = new AbortController();
    const onInterrupt = () => interrupt.abort();
    process.once('SIGINT', onInterrupt);
    // As Ctrl-C: systemd, Kubernetes and timeout(1) stop with SIGTERM.
    process.once('SIGTERM', onInterrupt);
    let summary: SendSummary;
    try {
      summary = await runSend({
        config: c,
        baseUrl,
        token,
        network,
        datasource: ds,
        inputs,
        deadLetters,
        log,
        onProgress: (s) => (live = s),
        onDone: (bytes) => (done += bytes),
        onRetrying: (why) => (retrying = why),
        signal: interrupt.signal,
      });
    } finally {
      process.off('SIGINT', onInterrupt);
      process.off('SIGTERM', onInterrupt);
      display.stop();
      await embedded?.close();
    }
    printSummary(summary, io, values.json === true);
    return summary.ok ? EXIT_OK : EXIT_FAILURE;
  },
};
export default command;
