// A long outage with a large backlog: every request answered 503 for
// --outage-seconds while --outage-size of lines is written to the spool. The
// backlog must live in the spool and the disk retry queue, not in memory:
// peak RSS (VmHWM) is the number, target <= 200 MB; when the outage ends every
// line must arrive. This was a process test's assertion until tests stopped
// asserting RSS (restructure issue; STYLE 13): the test keeps the delivery
// half (test/process/outage-memory.test.ts).
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { metric, startAgent } from '../lib/agent.mjs';
import { ctx, MAX_BYTES } from '../lib/context.mjs';
import { backlogCorpus } from '../lib/corpus.mjs';
import { f0, f1, loadavg, table } from '../lib/format.mjs';
import { readProc } from '../lib/proc.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export async function outage() {
  const { opt, root, work, sections, summary, log } = ctx;
  const corpus = backlogCorpus(opt.corpusDir, { bytes: opt.outageSize });
  const outageMs = opt.outageSeconds * 1000;
  log(`outage: ${opt.outageSeconds} s of 503 while ${corpus.bytes} bytes are written; loadavg ${loadavg()}`);
  // The emulator in this process: its faults are switched off when the outage ends.
  const { startEmulator } = await import(path.join(root, 'build/tsc/emulator/index.js'));
  const emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: null, validateRows: false, rps: 100_000, maxBodyBytes: 10_000_000, faults: [{ kind: 'status', status: 503 }] });
  const dir = mkdtempSync(path.join(work, 'outage-'));
  const spoolDir = path.join(dir, 'spool');
  const file = path.join(spoolDir, corpus.ds, 'app.ndjson');
  mkdirSync(path.dirname(file), { recursive: true });
  const agent = await startAgent(root, { workDir: dir, url: emu.url, token: emu.token, spoolDir, stateDir: path.join(dir, 'state'), codec: opt.codec, level: opt.level, lingerMs: 200, maxBytes: MAX_BYTES, dist: opt.agentDist, env: opt.agentEnv });
  try {
    await agent.waitFor(() => true, { timeoutMs: 30_000 });
    const t0 = performance.now();
    // Copy the corpus into the spool in 4 MB writes spread over the outage
    // less 8 s, as a busy application would write.
    const out = openSync(file, 'a');
    const buf = Buffer.allocUnsafe(4 * 1024 * 1024);
    let copied = 0;
    let peakDuringMB = 0;
    try {
      const src = path.join(corpus.dir, corpus.ds);
      for (const name of readdirSync(src).sort()) {
        const fd = openSync(path.join(src, name), 'r');
        for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) {
          writeSync(out, buf, 0, n);
          copied += n;
          await sleep((copied / corpus.bytes) * (outageMs - 8000) - (performance.now() - t0));
          peakDuringMB = Math.max(peakDuringMB, readProc(agent.pid)?.hwmMB ?? 0);
        }
        closeSync(fd);
      }
    } finally {
      closeSync(out);
    }
    const writtenS = (performance.now() - t0) / 1000;
    await sleep(outageMs - (performance.now() - t0));
    const text = await agent.metrics();
    const queueMB = metric(text, 'spoolship_queue_bytes') / 1e6;
    const hwmOutageMB = readProc(agent.pid)?.hwmMB ?? 0;
    const rowsDuring = emu.stats().rows[corpus.ds] ?? 0;
    emu.setFaults([]);
    const r0 = performance.now();
    for (;;) {
      if ((emu.stats().rows[corpus.ds] ?? 0) >= corpus.lines) break;
      if (agent.exited) throw new Error(`agent exited (${JSON.stringify(agent.exited)}); see ${dir}/agent.log`);
      if (performance.now() - r0 > 300_000) throw new Error('not every line arrived within 300 s of the outage end');
      await sleep(200);
    }
    const recoverS = (performance.now() - r0) / 1000;
    await agent.waitFor((t) => metric(t, 'spoolship_queue_batches') === 0, { timeoutMs: 60_000 });
    const s = await agent.stop();
    const row = {
      written: `${f0(corpus.bytes / 1e6)} MB in ${f1(writtenS)} s`,
      outage: `${opt.outageSeconds} s`,
      queueMB: f0(queueMB),
      rowsDuring,
      peakDuringMB: f0(peakDuringMB),
      peakOutageMB: f0(hwmOutageMB),
      peakMB: f0(s.hwmMB),
      recoverS: f1(recoverS),
      arrived: `${emu.stats().rows[corpus.ds] ?? 0} / ${corpus.lines}`,
      exit: JSON.stringify(s.exit),
    };
    log(`outage: peak RSS ${row.peakMB} MB (during writes ${row.peakDuringMB}, at the outage end ${row.peakOutageMB}), queue ${row.queueMB} MB, recovered in ${row.recoverS} s`);
    const cols = [
      ['written', (r) => r.written, 'l'],
      ['outage', (r) => r.outage],
      ['disk queue at outage end MB', (r) => r.queueMB],
      ['rows stored during the outage', (r) => r.rowsDuring],
      ['peak RSS while writing MB', (r) => r.peakDuringMB],
      ['peak RSS at outage end MB', (r) => r.peakOutageMB],
      ['peak RSS overall MB', (r) => r.peakMB],
      ['all arrived after s', (r) => r.recoverS],
      ['rows arrived', (r) => r.arrived],
      ['exit', (r) => r.exit, 'l'],
    ];
    sections.push(`### Long outage with a large backlog\n\n${table(cols, [row])}\n`);
    summary.push(['outage: peak RSS <= 200 MB (backlog in the spool and the disk queue)', `${row.peakMB} MB`]);
    if (!opt.keep) rmSync(dir, { recursive: true, force: true });
  } finally {
    if (!agent.exited) await agent.stop();
    await emu.close();
  }
}
