// Property: for any sequence of write / rotate / truncate / delete / restart,
// every line written is delivered, and none twice (no fault is injected).
// Rotations rename within the patterns, out of them, or into an olddir; the
// application may go on writing to the file it last rotated (logrotate's
// default: it writes there until it reopens), before or after a restart.
// Truncate and delete happen once what was written is delivered: lines
// written between the last read and a copytruncate are gone by definition
// (README "Delivery guarantee"), so the model only truncates a fully shipped file.
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { rename, rm, truncate } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { configFor, expectExactlyOnce, rows, startAgent, startEmu, tempDir, waitFor, waitForRows, writeLines, type Running } from './helpers.js';

function knows(agent: Running, file: string): boolean {
  return existsSync(file) && agent.agent.isFollowing(file, statSync(file).ino);
}

type Action =
  | { t: 'write'; file: number; n: number }
  | { t: 'rotate'; file: number }
  | { t: 'rotate_out'; file: number; olddir: boolean }
  | { t: 'late_write'; file: number; n: number }
  | { t: 'truncate'; file: number }
  | { t: 'delete'; file: number }
  | { t: 'restart' };

const file = fc.integer({ min: 0, max: 1 });
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('write' as const), file, n: fc.integer({ min: 1, max: 400 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('rotate' as const), file }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('rotate_out' as const), file, olddir: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('late_write' as const), file, n: fc.integer({ min: 1, max: 200 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('truncate' as const), file }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), file }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const) }) },
);

describe('spool model (property)', () => {
  it('delivers every line written exactly once, whatever the sequence of rotations and restarts', async () => {
    let run = 0;
    await fc.assert(
      // scanSlice 1: every scan reads between files, as a scan of more than
      // 1,024 files does between its slices (spool/discovery.ts).
      fc.asyncProperty(fc.array(action, { minLength: 3, maxLength: 10 }), fc.constantFrom(1, undefined), async (actions, scanSlice) => {
        run++;
        const dir = await tempDir();
        const emu = await startEmu(dir);
        // idle_ms beyond the run: a rotated file is still written to at any later step.
        const config = configFor(dir, emu, { batch: { max_bytes: 8_000 }, spool: { idle_ms: 600_000 } });
        const spool = path.join(dir, 'spool', 'ev');
        const expected: string[] = [];
        let seq = 0;
        let rotations = 0;
        const live = (f: number) => path.join(spool, `app${f}.ndjson`);
        /** Where each file's application still writes after its last rotation (until it reopens). */
        const rotatedOf = new Map<number, string>();
        mkdirSync(path.join(spool, 'old'), { recursive: true });
        const delivered = () => waitForRows(emu, dir, 'ev', expected, `${expected.length} rows (run ${run})`);
        let agent: Running = await startAgent(config, { scanSlice });
        for (const a of actions) {
          switch (a.t) {
            case 'write': {
              const lines = Array.from({ length: a.n }, () => JSON.stringify({ run, seq: seq++ }));
              expected.push(...lines);
              await writeLines(live(a.file), lines);
              break;
            }
            case 'rotate':
              if (!existsSync(live(a.file))) break;
              rotatedOf.set(a.file, path.join(spool, `app${a.file}.${++rotations}.ndjson`));
              await rename(live(a.file), rotatedOf.get(a.file)!);
              break;
            case 'late_write': {
              const to = rotatedOf.get(a.file);
              if (!to || !existsSync(to)) break;
              const lines = Array.from({ length: a.n }, () => JSON.stringify({ run, seq: seq++ }));
              expected.push(...lines);
              await writeLines(to, lines);
              break;
            }
            case 'rotate_out':
              if (!existsSync(live(a.file))) break;
              // SPEC: a file *being read* that leaves the patterns is read to
              // its end. One renamed away before it was ever discovered is out
              // of any tailer's sight, so wait until the agent knows it (lines
              // written just before the rename may still be unread).
              await waitFor(() => knows(agent, live(a.file)), `discovery of ${live(a.file)}`);
              rotatedOf.set(a.file, a.olddir ? path.join(spool, 'old', `app${a.file}.ndjson.${++rotations}`) : path.join(spool, `app${a.file}.ndjson.${++rotations}`));
              await rename(live(a.file), rotatedOf.get(a.file)!);
              break;
            case 'truncate':
              await delivered();
              if (existsSync(live(a.file))) await truncate(live(a.file), 0);
              break;
            case 'delete':
              await delivered();
              await rm(live(a.file), { force: true });
              break;
            case 'restart':
              await agent.stop();
              agent = await startAgent(config, { scanSlice });
              break;
          }
        }
        await delivered();
        await agent.stop();
        expectExactlyOnce(rows(emu, dir, 'ev'), expected);
      }),
      { numRuns: 25, seed: Number(process.env.SPOOLSHIP_PROPERTY_SEED ?? 20261121), endOnFailure: true },
    );
    expect(run).toBeGreaterThanOrEqual(25);
  });
});
