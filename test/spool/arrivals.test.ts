// A file created in a watched directory is looked at at once, whatever the
// scan's pacing (spooler.ts): the next scan waits four times as long as the
// last one took (a spool of 20,000 files scans in ~0.3 s), and a file
// created and renamed out of the patterns in between was never known, its
// lines lost. The scan's duration is the manual clock's: each listing here
// "takes" a second, and the clock stands still until the test moves it.
import { appendFileSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Admission } from '../../src/spool/admission.js';
import type { SpoolerOptions } from '../../src/spool/options.js';
import { waitFor } from '../pipeline/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { sent, setup } from './helpers.js';

function lines(prefix: string, from: number, n: number): string {
  return Array.from({ length: n }, (_, i) => `{"${prefix}":${from + i}}\n`).join('');
}

/** A running spooler whose listings each take a second of the manual clock; `prepare` runs on the spool before it starts. */
async function slowScans(prepare?: (spool: string) => void, room?: SpoolerOptions['room']) {
  const clock = new ManualClock();
  const discovered: string[] = [];
  const skipped: string[] = [];
  const s = await setup({ onDiscovered: (_ds, p) => discovered.push(p) }, (spool) => ({
    clock,
    watch: true,
    // spool.follow_symlinks: inside, as the agent has it by default.
    admission: new Admission({ spoolDir: spool, sourceBases: [], exclude: [], followSymlinks: 'inside', onSkippedLink: (p) => skipped.push(p) }),
    ...(room ? { room } : {}),
  }));
  prepare?.(s.spool);
  let scans = 0;
  s.internals.listCandidates = async () => {
    scans++;
    const listed = await s.realList();
    clock.advance(1000);
    return listed;
  };
  s.spooler.start();
  await s.spooler.firstScanEnded;
  return { ...s, clock, discovered, skipped, scans: () => scans };
}

describe('a file created between two scans', () => {
  it('is followed from its creation while the scan pacing holds the next scan back; renamed away before that scan, every line is read', async () => {
    const s = await slowScans();
    try {
      const b = path.join(s.spool, 'ev', 'b.ndjson');
      writeFileSync(b, lines('b', 0, 10));
      await waitFor(() => s.discovered.includes(b), 'b.ndjson discovered without a scan');
      expect(s.scans()).toBe(1);
      // logrotate's default: renamed out of the patterns, written on until the writer reopens.
      renameSync(b, `${b}.1`);
      appendFileSync(`${b}.1`, lines('b', 10, 5));
      // The next scan finds it renamed away; it is read through the descriptor taken at its discovery.
      s.clock.advance(5000);
      await waitFor(() => [...s.spooler.files].some((t) => t.path === `${b}.1` && t.detached && t.readOffset === Buffer.byteLength(lines("b", 0, 15))), 'the renamed file read to its end');
      s.batcher.closeAll();
      expect(sent(s)).toBe(lines('b', 0, 15));
    } finally {
      await s.spooler.close();
    }
  });

  it('in a Data Source directory created since the last scan: followed before the next scan, and read to its end once renamed away', async () => {
    const s = await slowScans();
    try {
      const dir = path.join(s.spool, 'ev2');
      mkdirSync(dir);
      const b = path.join(dir, 'b.ndjson');
      writeFileSync(b, lines('b', 0, 10));
      await waitFor(() => s.discovered.includes(b), 'ev2/b.ndjson discovered without a scan');
      // The new directory is watched too: a second file there is found the same way.
      const c = path.join(dir, 'c.ndjson');
      writeFileSync(c, lines('c', 0, 2));
      await waitFor(() => s.discovered.includes(c), 'ev2/c.ndjson discovered without a scan');
      expect(s.scans()).toBe(1);
      renameSync(b, `${b}.1`);
      appendFileSync(`${b}.1`, lines('b', 10, 5));
      s.clock.advance(5000);
      await waitFor(() => [...s.spooler.files].some((t) => t.path === `${b}.1` && t.detached && t.readOffset === Buffer.byteLength(lines('b', 0, 15))), 'the renamed file read to its end');
      s.batcher.closeAll();
      expect(sent(s).split('\n').filter(Boolean).sort()).toEqual([...lines('b', 0, 15).split('\n'), ...lines('c', 0, 2).split('\n')].filter(Boolean).sort());
    } finally {
      await s.spooler.close();
    }
  });

  it('is followed while the reader waits for room (the server slow or down), before the next scan', async () => {
    // No room, ever: the read round waits until it is told to stop waiting.
    const room: SpoolerOptions['room'] = {
      hasRoom: false,
      waitForRoom: (signal) => new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
    };
    const s = await slowScans((spool) => writeFileSync(path.join(spool, 'ev', 'a.ndjson'), lines('a', 0, 3)), room);
    try {
      const b = path.join(s.spool, 'ev', 'b.ndjson');
      writeFileSync(b, lines('b', 0, 3));
      await waitFor(() => s.discovered.includes(b), 'b.ndjson discovered while the reader waits for room');
      expect(s.scans()).toBe(1);
    } finally {
      // The wait for room ends as a stop's drain ends it.
      await s.spooler.stopReading();
      await s.spooler.close();
    }
  });

  it('a file created in a Data Source directory that links outside the spool is judged as the scan judges it: not read', async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), 'spoolship-outside-'));
    onTestFinished(() => rm(outside, { recursive: true, force: true }));
    const s = await slowScans((spool) => {
      symlinkSync(outside, path.join(spool, 'linked'));
      mkdirSync(path.join(spool, 'ok'));
    });
    try {
      const leak = path.join(outside, 'secret.ndjson');
      writeFileSync(leak, '{"secret":1}\n');
      // Events come in order (one inotify queue): once ok.ndjson is found, the secret's event was looked at.
      const ok = path.join(s.spool, 'ok', 'a.ndjson');
      writeFileSync(ok, lines('ok', 0, 3));
      await waitFor(() => s.discovered.includes(ok), 'ok/a.ndjson discovered without a scan');
      expect(s.discovered).toEqual([ok]);
      expect(s.skipped).toEqual([path.join(s.spool, 'linked')]);
    } finally {
      await s.spooler.close();
    }
  });
});
