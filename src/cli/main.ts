// Dispatcher: finds the command, prints help and version, and turns thrown
// SpoolshipErrors into their exit codes. Command modules load lazily so that
// `spoolship --version` and `check-config` do not pay for undici or zstd.
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, SpoolshipError, fsErrorMessage } from '../errors.js';
import type { CliIo, Command } from './command.js';
import { version } from '../util/version.js';

interface Entry {
  summary: string;
  load: () => Promise<Command>;
}

const COMMANDS: Record<string, Entry> = {
  run: { summary: 'run the agent: tail the spool and ship it', load: async () => (await import('./commands/run.js')).default },
  send: { summary: 'ship files or stdin once, then exit', load: async () => (await import('./commands/send.js')).default },
  emulator: { summary: 'run the local emulator of the Events and cluster APIs', load: async () => (await import('./commands/emulator.js')).default },
  'check-config': { summary: 'validate the config and print it with secrets redacted', load: async () => (await import('./commands/check-config.js')).default },
  status: { summary: 'show progress per Data Source and file', load: async () => (await import('./commands/status.js')).default },
  'dead-letter': { summary: 'list, replay or purge rejected lines', load: async () => (await import('./commands/dead-letter.js')).default },
  queue: { summary: 'list the disk retry queue, or move stuck batches to dead letters', load: async () => (await import('./commands/queue.js')).default },
  clusters: { summary: 'manage dedicated clusters (list, config, rebalance, replicas)', load: async () => (await import('./commands/clusters.js')).default },
};

export { version };

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  return [
    'spoolship: ships local NDJSON spool files to the Events API and never loses a line',
    '',
    'Usage: spoolship <command> [options]',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, e]) => `  ${name.padEnd(width)}  ${e.summary}`),
    '',
    'Options:',
    '  -h, --help     show help (also: spoolship <command> --help)',
    '  -V, --version  print the version',
    '',
    'Exit codes: 0 ok, 1 runtime failure, 2 usage or config error (nothing was done).',
    '',
  ].join('\n');
}

function closest(word: string): string | null {
  let best: string | null = null;
  let bestDist = Infinity;
  for (const name of Object.keys(COMMANDS)) {
    const d = editDistance(word, name);
    if (d < bestDist) {
      bestDist = d;
      best = name;
    }
  }
  return bestDist <= 3 ? best : null;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  // `spoolship help run` is `spoolship run --help`.
  if (first === 'help' && rest[0] !== undefined && COMMANDS[rest[0]]) return main([rest[0], '--help'], io);
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    io.stdout.write(mainHelp());
    return first === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (first === '--version' || first === '-V') {
    io.stdout.write(`${version()}\n`);
    return EXIT_OK;
  }
  const entry = COMMANDS[first];
  if (!entry) {
    const hint = first.startsWith('-') ? '' : closest(first);
    io.stderr.write(
      `spoolship: unknown ${first.startsWith('-') ? 'option' : 'command'} '${first}'` +
        (hint ? `; did you mean '${hint}'?` : '') +
        `\nRun 'spoolship --help' for the list of commands.\n`,
    );
    return EXIT_USAGE;
  }
  const command = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(command.usage.endsWith('\n') ? command.usage : `${command.usage}\n`);
    return EXIT_OK;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof SpoolshipError) {
      io.stderr.write(`spoolship ${first}: ${err.message}\n`);
      return err.exitCode;
    }
    const fsMessage = fsErrorMessage(err);
    if (fsMessage) {
      io.stderr.write(`spoolship ${first}: ${fsMessage}\n`);
      return EXIT_FAILURE;
    }
    io.stderr.write(`spoolship ${first}: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
    return EXIT_FAILURE;
  }
}
