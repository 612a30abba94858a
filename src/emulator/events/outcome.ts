// What the Events API decided for one request. The HTTP layer carries it out:
// only it can answer, drop the connection, or send GOAWAY.
import type { EmuResponse } from '../types.js';

export type EventsOutcome =
  | { kind: 'respond'; response: EmuResponse }
  /** Destroy the connection without answering (reset, reset_after_insert). */
  | { kind: 'reset' }
  /** Never answer; the request stays open until the client gives up or close(). */
  | { kind: 'hang' }
  /** HTTP/2: GOAWAY (code 7) on the session, stream unanswered. HTTP/1.1: like reset. */
  | { kind: 'goaway' };

export interface EventsResult {
  outcome: EventsOutcome;
  name: string | null;
  /** Decoded body size, or null when not decoded. */
  decodedBytes: number | null;
  /** SHA-1 of the decoded body (hex), when requests are recorded (EventsApiDeps.hashBodies) and it was decoded. */
  decodedSha1?: string | null;
}

export function jsonError(status: number, message: string, headers?: Record<string, string>): EventsOutcome {
  return { kind: 'respond', response: { status, headers, body: { error: message } } };
}
