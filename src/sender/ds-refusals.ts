// Refusals of one Data Source, not of the whole budget: its park (park.ts)
// and what the answers say about the token for each Data Source.
//
// | what happened                                        | decision                               |
// |------------------------------------------------------|----------------------------------------|
// | 403, the token accepted for another Data Source within TOKEN_PROOF_WINDOW_MS (and not refused there since) | park this Data Source alone: datasource_rejected |
// | 403, nothing proves the token                        | the budget parks (the sender: token_rejected) |
// | 400 for single lines of several quarters, nothing accepted | park this Data Source: bad_request (the sender) |
// | a batch of a parked Data Source is acknowledged      | unpark it (the sender)                  |
// | an operator moved its batches away, none waiting     | unpark it; with one waiting, it probes now |
import type { Clock } from '../util/clock.js';
import type { Notifier } from './notifier.js';
import { Park } from './park.js';

/** Why one Data Source (not the whole budget) is parked. */
export type DsParkReason = 'bad_request' | 'datasource_rejected';
/**
 * A 403 parks only its Data Source when the same token was accepted for
 * another Data Source within this long (and that one was not refused since):
 * a Data Source that does not exist, with a token that may not create it.
 */
export const TOKEN_PROOF_WINDOW_MS = 10 * 60 * 1000;

const WHY: Record<DsParkReason, string> = {
  bad_request: 'HTTP 400 for single lines of several parts of a batch, nothing accepted',
  datasource_rejected: 'HTTP 403 for this Data Source while the same token is accepted for others (it does not exist, and the token may not create it)',
};

const NONE: ReadonlySet<string> = new Set();

export class DataSourceRefusals {
  private readonly parks = new Map<string, Park<DsParkReason>>();
  /** Per Data Source: when the token was last accepted for it, and whether a refusal (403) came since (by order: both may fall in one clock millisecond). */
  private readonly tokenSeen = new Map<string, { acceptedAt: number; refusedSince: boolean }>();

  constructor(
    private readonly clock: Clock,
    private readonly notifier: Notifier,
    private readonly onParkChange: (ds: string, reason: DsParkReason | null, previous: DsParkReason | null, detail: string | null) => void,
  ) {}

  /** The Data Source's park, made on first use. */
  park(ds: string): Park<DsParkReason> {
    let p = this.parks.get(ds);
    if (!p) {
      p = new Park<DsParkReason>(this.clock, this.notifier, (r, prev) => this.onParkChange(ds, r, prev, r ? WHY[r] : null));
      this.parks.set(ds, p);
    }
    return p;
  }

  /** The Data Source's park if it ever had one (looking makes none). */
  find(ds: string): Park<DsParkReason> | undefined {
    return this.parks.get(ds);
  }

  /** Parked Data Sources, and with `unproven` (a 403 parked the budget) those refused since last accepted. */
  refusedNow(unproven: boolean): ReadonlySet<string> {
    // Asked for each read and each room check: nothing parked or refused (the usual case, also once every park ended) makes no Set.
    let out: Set<string> | null = null;
    for (const [ds, p] of this.parks) if (p.reason) (out ??= new Set()).add(ds);
    if (unproven) for (const ds of this.tokenSeen.keys()) if (this.refused(ds)) (out ??= new Set()).add(ds);
    return out ?? NONE;
  }

  /** Parked Data Sources and why. */
  parked(): Map<string, DsParkReason> {
    const out = new Map<string, DsParkReason>();
    for (const [ds, p] of this.parks) if (p.reason) out.set(ds, p.reason);
    return out;
  }

  /**
   * A 403 for `ds`: 'datasource' when the token was accepted for another
   * Data Source lately (the caller parks `ds` alone), else 'budget'. The
   * refusal is noted either way.
   */
  on403(ds: string): 'datasource' | 'budget' {
    const elsewhere = this.tokenWorksElsewhere(ds);
    this.noteToken(ds, false);
    return elsewhere ? 'datasource' : 'budget';
  }

  /** A 2xx for `ds`: the token works there. */
  accepted(ds: string): void {
    this.noteToken(ds, true);
  }

  /** Was the token accepted for another Data Source lately, and not refused there since? */
  private tokenWorksElsewhere(ds: string): boolean {
    const now = this.clock.now();
    for (const [other, t] of this.tokenSeen) {
      if (other !== ds && now - t.acceptedAt <= TOKEN_PROOF_WINDOW_MS && !t.refusedSince) return true;
    }
    return false;
  }

  /** Was the token refused for this Data Source since it was last accepted there? */
  refused(ds: string): boolean {
    const t = this.tokenSeen.get(ds);
    return t?.refusedSince === true;
  }

  private noteToken(ds: string, accepted: boolean): void {
    const t = this.tokenSeen.get(ds) ?? { acceptedAt: -Infinity, refusedSince: false };
    if (accepted) t.acceptedAt = this.clock.now();
    t.refusedSince = !accepted;
    this.tokenSeen.set(ds, t);
  }

  /** SIGHUP / token file change: every parked Data Source probes now. */
  wake(): void {
    for (const p of this.parks.values()) p.wake();
  }

  /**
   * An operator moved batches of a Data Source away (`spoolship queue
   * dead-letter` releases its park): with none of its batches left waiting
   * (`stillWaiting` false) the park ends, since the batch it was about is
   * gone; otherwise the next one probes now (one request, not every waiting
   * batch at once).
   */
  operatorMoved(ds: string, stillWaiting: boolean): void {
    const park = this.parks.get(ds);
    if (!park?.parked) return;
    if (stillWaiting) park.wake();
    else park.unpark();
  }

  /**
   * Milliseconds until a batch of `ds` may be sent as far as its own park
   * goes: 0 when the Data Source is not parked or its probe is due.
   */
  waitMs(ds: string): number {
    return this.parks.get(ds)?.probeWaitMs() ?? 0;
  }
}
