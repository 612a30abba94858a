// Every error that reaches a user is one of these classes, with a stable
// `code`. Callers branch on `code` (or `instanceof`), never on the message.
//
// | code                              | exit | meaning                                              |
// |-----------------------------------|------|------------------------------------------------------|
// | SPOOLSHIP_ERR_USAGE               | 2    | bad command line: unknown command/flag, missing arg  |
// | SPOOLSHIP_ERR_CONFIG              | 2    | config invalid; `problems` lists `path: value: why`  |
// | SPOOLSHIP_ERR_STATE_LOCKED        | 2    | another process holds the state_dir lock             |
// | SPOOLSHIP_ERR_TOKEN_REJECTED      | 1    | 401/403: the API token is not valid                  |
// | SPOOLSHIP_ERR_WORKSPACE_NOT_FOUND | 1    | 404: the token's region does not match the host      |
// | SPOOLSHIP_ERR_API                 | 1    | any other unexpected API answer (status + body)      |
// | SPOOLSHIP_ERR_PRECONDITION        | 1    | cluster operation refused (busy, cannot scale, ...)  |
// | SPOOLSHIP_ERR_FATAL_IO            | 1    | an fsync/IO error that is not ENOSPC: restart recovers |
// | SPOOLSHIP_ERR_STATE_CORRUPT       | 1    | no readable checkpoint (both copies fail their check)  |
// | SPOOLSHIP_ERR_STATE_DIR_LOST      | 1    | state_dir or its lock file was removed or replaced while running |
// | SPOOLSHIP_ERR_STATE_DIR_UNSAFE    | 2    | state_dir is another user's, or writable by others and not ours to tighten |
// | SPOOLSHIP_ERR_CONTROL_UNTRUSTED   | 2    | control.sock (or its state_dir) is not the agent's user's or root's, or not a socket |
// | SPOOLSHIP_ERR_NETWORK             | 1    | no HTTP answer: connection refused/reset, DNS, timeout |
// | SPOOLSHIP_ERR_WAIT_TIMEOUT        | 1    | an accepted cluster operation did not finish in time |

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export class SpoolshipError extends Error {
  readonly code: string;
  readonly exitCode: number;
  constructor(code: string, message: string, exitCode: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.exitCode = exitCode;
  }
}

export class UsageError extends SpoolshipError {
  constructor(message: string) {
    super('SPOOLSHIP_ERR_USAGE', message, EXIT_USAGE);
  }
}

/** One config problem, printed as `path: value: why`. */
export interface ConfigProblem {
  path: string;
  value: unknown;
  why: string;
}

export function formatProblem(p: ConfigProblem): string {
  let shown: string;
  if (p.value === undefined) shown = '(missing)';
  else if (typeof p.value === 'string') shown = JSON.stringify(p.value);
  // JSON would show Infinity (YAML's 1e400) and NaN as null.
  else if (typeof p.value === 'number' && !Number.isFinite(p.value)) shown = String(p.value);
  else {
    try {
      shown = JSON.stringify(p.value) ?? String(p.value);
    } catch {
      shown = String(p.value);
    }
  }
  return `${p.path}: ${shown}: ${p.why}`;
}

export class ConfigError extends SpoolshipError {
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[], source?: string) {
    const head = `invalid configuration${source ? ` in ${source}` : ''} (${problems.length} problem${problems.length === 1 ? '' : 's'}):`;
    super('SPOOLSHIP_ERR_CONFIG', [head, ...problems.map((p) => `  ${formatProblem(p)}`)].join('\n'), EXIT_USAGE);
    this.problems = problems;
  }
}

export class StateLockedError extends SpoolshipError {
  readonly holderPid: number | null;
  constructor(stateDir: string, holderPid: number | null) {
    super(
      'SPOOLSHIP_ERR_STATE_LOCKED',
      `state_dir ${stateDir} is in use by process ${holderPid ?? '(unknown pid)'}; stop it first, or give this agent its own state_dir`,
      EXIT_USAGE,
    );
    this.holderPid = holderPid;
  }
}

export class TokenRejectedError extends SpoolshipError {
  readonly status: number;
  constructor(status: number, body: string) {
    super(
      'SPOOLSHIP_ERR_TOKEN_REJECTED',
      `the API rejected the token (HTTP ${status}${body ? `: ${truncate(body)}` : ''}); check api.token / api.token_file (it needs DATASOURCE:APPEND or CREATE scope)`,
      EXIT_FAILURE,
    );
    this.status = status;
  }
}

export class WorkspaceNotFoundError extends SpoolshipError {
  constructor(body: string) {
    super(
      'SPOOLSHIP_ERR_WORKSPACE_NOT_FOUND',
      `the API answered 404: the token's Workspace is not on this host${body ? ` (${truncate(body)})` : ''}; set api.base_url to the host of the token's region`,
      EXIT_FAILURE,
    );
  }
}

export class ApiError extends SpoolshipError {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string, hint: string) {
    super('SPOOLSHIP_ERR_API', `the API answered HTTP ${status}${body ? `: ${truncate(body)}` : ''}; ${hint}`, EXIT_FAILURE);
    this.status = status;
    this.body = body;
  }
}

export class PreconditionError extends SpoolshipError {
  constructor(message: string) {
    super('SPOOLSHIP_ERR_PRECONDITION', message, EXIT_FAILURE);
  }
}

/**
 * Something other than the agent's own directory where it keeps one under
 * state_dir (a symlink, a file): never followed, never cleared.
 */
export class StateLayoutError extends SpoolshipError {
  constructor(file: string, what: string) {
    super(
      'SPOOLSHIP_ERR_STATE_LAYOUT',
      `${file} is ${what}: the agent keeps its own directory there and never follows a link in state_dir (clearing it would delete what the link points to); move it away and start again`,
      EXIT_USAGE,
    );
  }
}

/**
 * A state_dir that someone other than the agent's user (and root) may
 * change: they could replace its control socket, its queue or its
 * checkpoint. The agent tightens a loose directory it owns itself; this is
 * the one it cannot.
 */
export class StateDirUnsafeError extends SpoolshipError {
  constructor(dir: string, why: string, fix: string) {
    super('SPOOLSHIP_ERR_STATE_DIR_UNSAFE', `state_dir ${dir} ${why}, so another user could replace what the agent keeps there (its control socket, queue, checkpoint); ${fix}`, EXIT_USAGE);
  }
}

/** A command refuses to trust what answers on control.sock: see `ownedByUsOrRoot` in control/trust.ts. */
export class ControlUntrustedError extends SpoolshipError {
  constructor(what: string, why: string) {
    super('SPOOLSHIP_ERR_CONTROL_UNTRUSTED', `${what} ${why}: not trusted (it could be another user's forgery); run this command as the agent's user, and see docs/troubleshooting.md`, EXIT_USAGE);
  }
}

export class FatalIoError extends SpoolshipError {
  constructor(message: string, cause: unknown) {
    super('SPOOLSHIP_ERR_FATAL_IO', message, EXIT_FAILURE, { cause });
  }
}

/** Neither checkpoint.json nor its .prev passes its check: what was delivered is unknown, so nothing starts. */
export class StateCorruptError extends SpoolshipError {
  constructor(
    readonly stateDir: string,
    readonly problems: string[],
  ) {
    super(
      'SPOOLSHIP_ERR_STATE_CORRUPT',
      `no readable checkpoint in ${stateDir} (${problems.join('; ')}); restore checkpoint.json from a backup, or move the state_dir away to start over (every spool file is then read again from its start: duplicates, never a gap)`,
      EXIT_FAILURE,
    );
  }
}

/** A state file (a journal, a queue record) in a format version newer than this release reads: going back needs a fresh state_dir. */
export class StateTooNewError extends SpoolshipError {
  constructor(
    readonly file: string,
    readonly version: unknown,
    readonly reads: number,
  ) {
    super(
      'SPOOLSHIP_ERR_STATE_TOO_NEW',
      `${file} has format version ${JSON.stringify(version)}, which this release cannot read (it reads version ${reads}; a newer spoolship wrote it?): run that release, or move the state_dir away to start over (every spool file is then read again from its start: duplicates, never a gap)`,
      EXIT_FAILURE,
    );
  }
}

/** The retry queue's compaction marker cannot be read: which queued records are copies is unknown, so nothing starts (queue/compact.ts). */
export class QueueMarkerCorruptError extends SpoolshipError {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(
      'SPOOLSHIP_ERR_QUEUE_MARKER_CORRUPT',
      `${file} cannot be read (${problem}): a compaction of the retry queue was cut short and its copies cannot be told from the batches they copy; move the file away to start (a batch it was moving may then be sent twice, nothing is lost)`,
      EXIT_FAILURE,
    );
  }
}

/**
 * state_dir or its lock file was removed or replaced under a running agent:
 * it no longer owns its state, and a second agent may ship the same files.
 */
export class StateDirLostError extends SpoolshipError {
  constructor(readonly loss: { what: 'state_dir' | 'lock_file'; how: 'removed' | 'replaced'; path: string }) {
    super(
      'SPOOLSHIP_ERR_STATE_DIR_LOST',
      `${loss.what === 'state_dir' ? 'state_dir' : 'the state_dir lock file'} ${loss.path} was ${loss.how} while the agent ran; exiting so that no second agent ships the same files. Restore it or start again (a fresh state_dir re-reads every spool file from the start)`,
      EXIT_FAILURE,
    );
  }
}

/** A request got no HTTP answer at all, so there is no status to report. */
export class NetworkError extends SpoolshipError {
  constructor(message: string, cause: unknown) {
    super('SPOOLSHIP_ERR_NETWORK', message, EXIT_FAILURE, { cause });
  }
}

/** `clusters ... --wait`: the change was accepted but the cluster had not settled when the wait ran out. */
export class WaitTimeoutError extends SpoolshipError {
  constructor(message: string) {
    super('SPOOLSHIP_ERR_WAIT_TIMEOUT', message, EXIT_FAILURE);
  }
}

function truncate(s: string, max = 300): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/**
 * A file-system error on a path from the config (a file where state_dir
 * should be, no permission), told as the path and the fix rather than a
 * stack trace; null for any other error.
 */
export function fsErrorMessage(err: unknown): string | null {
  const e = err as NodeJS.ErrnoException | null;
  if (typeof e?.code !== 'string' || typeof e.path !== 'string') return null;
  return `cannot ${e.syscall ?? 'use'} ${e.path} (${e.code}); check that path in the config (state_dir, spool.dir) and its permissions, or run as the agent's user`;
}
