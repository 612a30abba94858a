// Progress of `spoolship send` on stderr: a bar redrawn in place on a TTY,
// a plain line every few seconds otherwise.

export interface ProgressSnapshot {
  bytesRead: number;
  totalBytes: number | null;
  linesAcked: number;
  linesDeadLettered: number;
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
    const s = this.snapshot();
    const secs = Math.max(0.001, (Date.now() - this.started) / 1000);
    const rate = s.linesAcked / secs;
    const mbps = s.bytesRead / 1e6 / secs;
    let text = `${fmt(s.linesAcked)} lines acked (${fmt(Math.round(rate))}/s), ${(s.bytesRead / 1e6).toFixed(1)} MB read (${mbps.toFixed(1)} MB/s)`;
    if (s.linesDeadLettered) text += `, ${fmt(s.linesDeadLettered)} dead-lettered`;
    if (s.totalBytes) {
      const frac = Math.min(1, s.bytesRead / s.totalBytes);
      const eta = frac > 0 ? Math.max(0, secs / frac - secs) : 0;
      text = `${bar(frac, 24)} ${(frac * 100).toFixed(0).padStart(3)}%  ${text}  ETA ${Math.ceil(eta)}s`;
    }
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${text.slice(0, (this.out.columns ?? 120) - 1)}`);
    else this.out.write(`send: ${text}\n`);
  }
}

function bar(frac: number, width: number): string {
  const full = Math.round(frac * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`;
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}
