// The contract between the dispatcher (main.ts) and each command module.
import { statSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../errors.js';
import { secureExistingStateDir } from '../state/dir-trust.js';

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

/**
 * A command about to write a stopped agent's state_dir judges it as the
 * agent does at start (state/dir-trust.ts): false when it does not exist
 * (nothing is kept there, and nothing is created); a StateDirUnsafeError
 * (exit 2) when someone else may change it; tightened to 0700, saying so,
 * when it is the command's own user's and looser.
 */
export async function stateDirToWrite(stateDir: string, command: string, io: CliIo): Promise<boolean> {
  return secureExistingStateDir(stateDir, (modeWas) =>
    io.stderr.write(`spoolship ${command}: warning: state_dir ${stateDir} was mode ${modeWas}: made it 0700, so no other user can replace what the agent keeps there (state_dir_tightened)\n`),
  );
}

/**
 * A command that reads a state_dir says where it reads when that may not be
 * what was meant: no config file found (the defaults), a state_dir that does
 * not exist (a typo'd path, or the wrong directory without -c, would look
 * like an agent with nothing to show).
 */
export function noteWhereRead(command: string, loaded: { file: string | null; searched: string[]; config: { state_dir: string } }, io: CliIo): void {
  if (loaded.file === null) io.stderr.write(`spoolship ${command}: note: no config file found (looked for ${loaded.searched.join(', ')}); using the defaults and SPOOLSHIP_* variables\n`);
  const dir = loaded.config.state_dir;
  if (missing(dir)) io.stderr.write(`spoolship ${command}: note: state_dir ${dir} does not exist: no agent has kept state there (give the agent's config with -c, or set state_dir)\n`);
}

/** No such path (ENOENT); another failure (a file in the way) is the command's to report. */
function missing(dir: string): boolean {
  try {
    statSync(dir);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}
