// A promise rejection or an exception that no part of the agent handles ends
// `run` the way its own fatal errors do (README "Logs and events": ERROR
// `fatal`, then `exiting_after_fatal` and exit 1), not as a bare stack trace:
// the log pipeline sees the event, the state_dir's lock is released, and the
// next start ships everything.
import { appendFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

/** Every batch the journals name (`i` records) is acknowledged there (`a`). */
function everyIntentAcked(stateDir: string): boolean {
  const sent = new Set<number>();
  const acked = new Set<number>();
  for (const name of readdirSync(stateDir).filter((n) => n.startsWith('journal-'))) {
    for (const r of readFileSync(path.join(stateDir, name), 'latin1').matchAll(/\{"t":"(i|a)","id":(\d+)/g)) (r[1] === 'i' ? sent : acked).add(Number(r[2]));
  }
  return sent.size > 0 && [...sent].every((id) => acked.has(id));
}

/** A preload that plants, on SIGUSR2, what no handler of the agent catches. */
function planter(dir: string, what: 'rejection' | 'exception'): string {
  const file = path.join(dir, `plant-${what}.cjs`);
  const plant = what === 'rejection' ? "Promise.reject(new Error('planted rejection'))" : "setImmediate(() => { throw new Error('planted exception'); })";
  writeFileSync(file, `process.on('SIGUSR2', () => { ${plant}; });\n`);
  return file;
}

describe('an unhandled failure in run (process)', () => {
  for (const what of ['rejection', 'exception'] as const) {
    it(`an unhandled ${what} logs ERROR fatal with its origin, exits 1 after exiting_after_fatal, and the next start ships every line`, async () => {
      const dir = await tempDir();
      const t = await startEmu(dir);
      const cfg = await writeConfig(dir, t);
      const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
      mkdirSync(path.dirname(file), { recursive: true });
      appendFileSync(file, lines('u', 0, 50));
      const first = spawnAgent(cfg.configFile, { NODE_OPTIONS: `--require ${planter(dir, what)}` });
      await first.started;
      await waitForDelivery(t, 'ev', 'u', 50, 'the first 50 lines');
      // A fatal end writes no more state (it is recovered from as after a
      // crash: acks not yet group-committed are resent). So the planted
      // failure comes once the acks are on disk: then no line may come twice.
      await waitFor(() => everyIntentAcked(cfg.stateDir), 'the acknowledgements in the journal', 10_000);
      first.child.kill('SIGUSR2');
      const exit = await first.exited;

      expect(first.rawErr.filter((l) => l.trim() !== ''), 'no bare stack trace').toEqual([]);
      const fatal = first.logs.find((l) => l.event === 'fatal');
      expect(fatal, JSON.stringify(first.logs.slice(-5))).toMatchObject({ level: 50, origin: what === 'rejection' ? 'unhandledRejection' : 'uncaughtException' });
      expect(String(fatal!.err)).toContain(`planted ${what}`);
      expect(first.logs.at(-1)?.event).toBe('exiting_after_fatal');
      expect(exit.code).toBe(1);

      // The lock was released and nothing is lost: the next start ships the rest.
      appendFileSync(file, lines('u', 50, 50));
      const second = spawnAgent(cfg.configFile);
      await second.started;
      await waitForDelivery(t, 'ev', 'u', 100, 'all 100 lines');
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
      const result = await checkDelivery(t, 'ev', 'u', 100);
      expect({ missing: result.missing, duplicates: result.duplicates }).toEqual({ missing: 0, duplicates: 0 });
    });
  }
});
