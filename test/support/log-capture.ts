// A pino logger whose JSON lines a test reads back as objects: the agent's
// log events (`event`, level, fields) are observable behaviour, asserted on
// directly instead of through stdout.
import { Writable } from 'node:stream';
import pino from 'pino';

export type LogRecord = Record<string, unknown>;

/**
 * `logs` fills as the agent logs. `levelWords`: the level as a word
 * ("warn"), as spoolship's own logger writes it; else pino's number (40).
 */
export function captureLogs(opts: { level?: pino.LevelWithSilent; levelWords?: boolean } = {}): { logs: LogRecord[]; log: pino.Logger } {
  const logs: LogRecord[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) logs.push(JSON.parse(l) as LogRecord);
      cb();
    },
  });
  const formatters = opts.levelWords ? { level: (label: string) => ({ level: label }) } : undefined;
  return { logs, log: pino({ level: opts.level ?? 'info', ...(formatters ? { formatters } : {}) }, sink) };
}
