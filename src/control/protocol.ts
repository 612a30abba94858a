// The local control channel between operator commands and a running agent:
// a Unix socket in state_dir (README "The disk retry queue"). Its file
// permissions are its authentication (state_dir is 0700, the socket 0600): a
// user who may read the state may run these commands, no one else; it is
// never on the admin TCP port.
//
// One request per connection: the client writes one JSON line, the agent
// answers one JSON line and closes.
import path from 'node:path';

export const CONTROL_SOCKET = 'control.sock';
/** A request line longer than this is refused (the requests are tiny). */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** sun_path holds 108 bytes with the terminating NUL; longer paths are bound relative to state_dir. */
export const MAX_SOCKET_PATH_BYTES = 107;

export function controlSocketPath(stateDir: string): string {
  return path.join(stateDir, CONTROL_SOCKET);
}

/**
 * `dead_letters_changed`: a replay or purge removed records; the agent counts
 * its dead-letter store again. `status`: the report /status serves, for
 * `spoolship status` when the admin endpoint cannot be asked (disabled, or
 * port 0).
 */
export type ControlRequest =
  | { op: 'queue_list'; datasource?: string }
  | { op: 'queue_dead_letter'; ids: number[]; datasource?: string }
  | { op: 'dead_letters_changed' }
  | { op: 'status' };

/** One batch of `spoolship queue list --json`. */
export interface QueueRow {
  id: number;
  datasource: string;
  state: 'queued' | 'parked';
  lines: number;
  /** Uncompressed bytes. */
  bytes: number;
  compressed_bytes: number;
  age_ms: number;
  attempts: number | null;
  last_status: number | null;
  last_error: string | null;
}

export interface MoveSummary {
  moved_batches: number;
  moved_lines: number;
  batches: Array<{ id: number; datasource: string; lines: number }>;
}

/** `code`: the command's exit code for a refusal (1: unknown ID, does not fit, agent stopping). */
export type ControlAnswer =
  | { ok: true; rows: QueueRow[] }
  | ({ ok: true } & MoveSummary)
  | { ok: true; dead_letter_bytes: number }
  | { ok: true; report: unknown }
  | { ok: false; code: number; error: string };
