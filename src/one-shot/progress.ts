// Progress of `spoolship send` on stderr: a bar redrawn in place on a TTY,
// a plain line every few seconds otherwise.

export interface ProgressSnapshot {
  bytesRead: number;
  /** Bytes of lines acknowledged or dead-lettered: what the bar and the ETA follow. */
  bytesDone: number;
  totalBytes: number | null;
  linesAcked: number;
  linesDeadLettered: number;
  /** Why requests are being retried, while they are (`network: ECONNREFUSED ...`). */
  retrying?: string | null;
}

const PLAIN_EVERY_MS = 5000;
const TTY_EVERY_MS = 200;

export class ProgressDisplay {
  private timer: NodeJS.Timeout | null = null;
  private readonly started = Date.now();

  constructor(
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
    private readonly snapshot: () => ProgressSnapshot,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.draw(), this.out.isTTY ? TTY_EVERY_MS : PLAIN_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.out.isTTY) this.out.write('\r\x1b[2K');
  }

  private draw(): void {
    const text = renderProgress(this.snapshot(), (Date.now() - this.started) / 1000);
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${text.slice(0, (this.out.columns ?? 120) - 1)}`);
    else this.out.write(`send: ${text}\n`);
  }
}

/**
 * One progress line. The bar, its percentage and the ETA follow the lines
 * acknowledged (or dead-lettered), not the bytes read: reading runs ahead of
 * the answers by up to max_in_flight batches.
 */
export function renderProgress(s: ProgressSnapshot, elapsedS: number): string {
  const secs = Math.max(0.001, elapsedS);
  const rate = s.linesAcked / secs;
  const mbps = s.bytesRead / 1e6 / secs;
  let text = `${fmt(s.linesAcked)} lines acked (${fmt(Math.round(rate))}/s), ${(s.bytesRead / 1e6).toFixed(1)} MB read (${mbps.toFixed(1)} MB/s)`;
  if (s.linesDeadLettered) text += `, ${fmt(s.linesDeadLettered)} dead-lettered`;
  if (s.retrying) text += `, retrying (${s.retrying}; Ctrl-C stops)`;
  if (s.totalBytes) {
    const frac = Math.min(1, s.bytesDone / s.totalBytes);
    const eta = frac > 0 ? Math.max(0, secs / frac - secs) : null;
    text = `${bar(frac, 24)} ${(frac * 100).toFixed(0).padStart(3)}%  ${text}  ETA ${eta === null ? 'unknown' : duration(eta)}`;
  }
  return text;
}

/** `45 s`, `3 min 05 s`, `2 h 07 min`. */
export function duration(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

function bar(frac: number, width: number): string {
  const full = Math.round(frac * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`;
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * What the progress line says a retry is for: the reason and its cause
 * (`503: HTTP 503`, `network: ECONNREFUSED ...`); a 400 or 413 has no cause:
 * the batch is cut smaller or searched for its rejected lines.
 */
export function retryText(reason: string, cause: string | null | undefined): string {
  if (cause) return `${reason}: ${cause}`;
  if (reason === '413') return 'HTTP 413: sending the batch in smaller pieces';
  if (reason === '400') return 'HTTP 400: finding the rejected lines';
  return reason;
}
