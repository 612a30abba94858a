// Counters behind `GET /_emulator/stats` and `Emulator.stats()`. Only Events
// API requests are counted; `bytes_in` is the request body bytes received on
// the wire (compressed, as sent), including bodies refused as too large.
// `last_rows_at` is the emulator clock's time of the last rows stored: the
// benchmark times every contestant by it, the same way.
import type { EmulatorStats } from './types.js';

export type RequestOutcome = number | 'reset' | 'hang' | 'goaway';

export class StatsCollector {
  readonly #byStatus = new Map<string, number>();
  readonly #rows = new Map<string, number>();
  readonly #quarantined = new Map<string, number>();
  #bytesIn = 0;
  #lastRowsAt: number | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  countRequest(outcome: RequestOutcome): void {
    bump(this.#byStatus, String(outcome), 1);
  }

  addRows(name: string, rows: number, quarantined: number): void {
    if (rows > 0) {
      bump(this.#rows, name, rows);
      this.#lastRowsAt = this.now();
    }
    if (quarantined > 0) bump(this.#quarantined, name, quarantined);
  }

  addBytesIn(bytes: number): void {
    this.#bytesIn += bytes;
  }

  snapshot(): EmulatorStats {
    return {
      requests_by_status: Object.fromEntries(this.#byStatus),
      rows: Object.fromEntries(this.#rows),
      quarantined: Object.fromEntries(this.#quarantined),
      bytes_in: this.#bytesIn,
      last_rows_at: this.#lastRowsAt,
    };
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}
