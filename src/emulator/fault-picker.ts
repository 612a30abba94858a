// Decides which configured fault (if any) a request gets.
//
// Rules (documented in docs/emulator.md):
// - `failNext(n, fault)` entries come first: while any is pending, the request
//   gets that fault and the configured list is not consulted (its `every`
//   counters do not advance), so a test sees exactly the fault it asked for.
// - Otherwise every configured entry whose `datasource` matches counts the
//   request (`every` counters advance for all of them, `p` draws one random
//   number each, in list order) and fires or not. Of the firing entries, every
//   `reject_marker` applies (it only acts on bodies containing its marker), and
//   the first firing entry of another kind is the request's action.
import { parseFault, parseFaults } from './faults.js';
import type { Fault, FaultKind } from './types.js';

export interface PickedFaults {
  /** The fault that shapes the answer, or null for normal processing. */
  action: FaultKind | null;
  /** Markers of the firing reject_marker entries: a decoded body containing one is answered 400. */
  markers: string[];
}

interface Entry {
  fault: Fault;
  seen: number;
}

const NONE: PickedFaults = { action: null, markers: [] };

export class FaultPicker {
  #entries: Entry[] = [];
  #next: { remaining: number; fault: Fault }[] = [];
  readonly #random: () => number;

  constructor(faults: readonly Fault[], random: () => number) {
    this.#random = random;
    this.setFaults(faults);
  }

  /** Replaces the configured faults (validated) and restarts their `every` counters. */
  setFaults(faults: readonly Fault[]): void {
    this.#entries = parseFaults(faults).map((fault) => ({ fault, seen: 0 }));
  }

  /** The next `n` Events requests get `fault`, ahead of the configured faults. */
  failNext(n: number, fault: FaultKind): void {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`failNext: n must be an integer >= 1, got ${n}`);
    this.#next.push({ remaining: n, fault: parseFault(fault, 'failNext fault') });
  }

  pick(name: string | null): PickedFaults {
    const head = this.#next[0];
    if (head) {
      head.remaining -= 1;
      if (head.remaining === 0) this.#next.shift();
      return toPicked([head.fault]);
    }
    if (this.#entries.length === 0) return NONE;
    const firing: Fault[] = [];
    for (const entry of this.#entries) {
      const f = entry.fault;
      if (f.datasource !== undefined && f.datasource !== name) continue;
      entry.seen += 1;
      if (f.every !== undefined ? entry.seen % f.every === 0 : f.p === undefined || this.#random() < f.p) firing.push(f);
    }
    return firing.length === 0 ? NONE : toPicked(firing);
  }
}

function toPicked(firing: Fault[]): PickedFaults {
  const markers: string[] = [];
  let action: FaultKind | null = null;
  for (const f of firing) {
    if (f.kind === 'reject_marker') markers.push(f.marker);
    else if (action === null) action = stripSelector(f);
  }
  return { action, markers };
}

function stripSelector(f: Fault): FaultKind {
  const { p: _p, every: _every, datasource: _ds, ...kind } = f;
  return kind as FaultKind;
}
