// A line over spool.max_line_bytes goes to the dead letters "as soon as it
// passes the limit", not when (or if) its newline comes: a writer that
// stopped inside a huge line left no record at all until the line ended.
// Across a kill -9 inside that line the record is not written again, and
// nothing of the line is ever sent.
import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LINE_BYTES, checkDelivery, kill9, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

interface Letter {
  reason: string;
  file: string;
  offset: number;
  bytes: number;
  line: string;
}

function deadLetters(configFile: string, cwd: string): Promise<Letter[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, 'dead-letter', 'list', '-c', configFile, '--json'], { cwd, env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`dead-letter list: ${stderr}`));
      else resolve(stdout.trim() === '' ? [] : stdout.trim().split('\n').map((l) => JSON.parse(l) as Letter));
    });
  });
}

describe('a line over max_line_bytes whose end is not written (process)', () => {
  it('is dead-lettered at once with the length read, once only across a kill -9 inside it; the lines around it ship, none of it does', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const cfg = await writeConfig(dir, t, { spool: { max_line_bytes: 2000 } });
    const file = path.join(cfg.spoolDir, 'ev', 'a.ndjson');
    mkdirSync(path.dirname(file), { recursive: true });
    appendFileSync(file, lines('a', 0, 50) + 'x'.repeat(5000));
    const first = spawnAgent(cfg.configFile);
    await first.started;
    await waitForDelivery(t, 'ev', 'a', 50, 'the lines before it');
    const letters = (await waitFor(async () => {
      const l = await deadLetters(cfg.configFile, dir);
      return l.length > 0 ? l : null;
    }, 'its dead letter while the line is still unfinished', 30_000, 200))!;
    expect(letters.map(({ reason, offset, bytes, line }) => ({ reason, offset, bytes, line: line.length }))).toEqual([{ reason: 'line_too_long', offset: 50 * LINE_BYTES, bytes: 5000, line: 2000 }]);
    expect(letters[0]!.file).toBe(file);
    // The state records the line (group-committed within 100 ms of the record): a kill -9 before that writes the record once more.
    const offset = `"lettered":${50 * LINE_BYTES}`;
    await waitFor(() => readdirSync(cfg.stateDir).some((f) => f.startsWith('journal-') && readFileSync(path.join(cfg.stateDir, f), 'latin1').includes(offset)), 'the line recorded in the journal', 10_000);
    // The writer goes on inside the line; the agent dies before its end.
    appendFileSync(file, 'x'.repeat(3000));
    await kill9(first);
    appendFileSync(file, 'x'.repeat(1000) + '\n' + lines('a', 50, 50));
    const second = spawnAgent(cfg.configFile);
    await second.started;
    await waitForDelivery(t, 'ev', 'a', 100, 'the lines after it', { duplicates: 'allow' });
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const check = await checkDelivery(t, 'ev', 'a', 100);
    expect(check.missing).toBe(0);
    expect(check.unexpected, 'nothing of the long line is sent').toBe(0);
    expect((await deadLetters(cfg.configFile, dir)).map((l) => [l.offset, l.bytes]), 'one record').toEqual([[50 * LINE_BYTES, 5000]]);
  }, 90_000);
});
