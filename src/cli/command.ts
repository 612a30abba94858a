// The contract between the dispatcher (main.ts) and each command module.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../errors.js';

export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface Command {
  name: string;
  summary: string;
  /** Full help text printed by `spoolship <cmd> --help`. */
  usage: string;
  /** Returns the exit code. Throw a SpoolshipError for a user-facing failure. */
  run(argv: string[], io: CliIo): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * node:util parseArgs in strict mode, with its errors turned into UsageError
 * (exit 2) that name the command and point at its --help.
 */
export function parseCommandArgs<O extends Options>(
  command: string,
  argv: string[],
  options: O,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args: argv, options, allowPositionals, strict: true });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      const msg = (err as Error).message.replace(/\. To specify a positional argument.*$/s, '');
      throw new UsageError(`${msg}; see 'spoolship ${command} --help'`);
    }
    throw err;
  }
}

export function wantsHelp(argv: string[]): boolean {
  return argv.includes('--help') || argv.includes('-h');
}
