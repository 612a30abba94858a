// Samples a process from /proc: RSS (VmRSS, VmHWM), CPU (utime + stime) and,
// optionally, open descriptors. Linux only; the numbers the issue asks for.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS = 100; // getconf CLK_TCK on Linux

export function readProc(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields after ")": state is index 0, so utime (14th field) is index 11, stime index 12
    const userS = Number(f[11]) / TICKS;
    const sysS = Number(f[12]) / TICKS;
    return { rssMB: kb('VmRSS') / 1024, hwmMB: kb('VmHWM') / 1024, cpuS: userS + sysS, userS, sysS, minflt: Number(f[7]) };
  } catch {
    return null;
  }
}

/** CPU seconds of the main thread of `pid` (its tid is the pid), or null once it has ended. */
export function mainThreadCpuS(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return null;
  }
}

/** CPU seconds of each thread of `pid`, by tid: the process's total hides where the time goes. */
export function readThreads(pid) {
  const out = new Map();
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), { comm, cpuS: (Number(f[11]) + Number(f[12])) / TICKS });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/**
 * Keeps the last reading of every thread seen (a thread that ends keeps its
 * time) and sums them by kind: the main thread, libuv's threadpool
 * (compression, the other file reads), the reader thread (the spool's reads
 * and the look at their lines, spool/scan-reader.ts: Node >= 22 names a
 * worker thread WorkerThread), V8's platform workers (concurrent GC and
 * compiling), and the rest.
 */
export function threadTracker(pid) {
  const last = new Map();
  return {
    update() {
      for (const [tid, t] of readThreads(pid)) last.set(tid, t);
    },
    byKind() {
      const k = { main: 0, pool: 0, reader: 0, v8: 0, other: 0 };
      for (const [tid, t] of last) {
        if (tid === pid) k.main += t.cpuS;
        else if (t.comm.startsWith('libuv-worker')) k.pool += t.cpuS;
        else if (t.comm === 'WorkerThread') k.reader += t.cpuS;
        else if (t.comm.startsWith('V8 ')) k.v8 += t.cpuS;
        else k.other += t.cpuS;
      }
      return k;
    },
  };
}

export function countFds(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** Samples every `everyMs` until stop(); keeps the maxima and the last reading. */
export function sampler(pid, { everyMs = 100, fds = false } = {}) {
  const s = { peakRssMB: 0, hwmMB: 0, cpuS: 0, userS: 0, sysS: 0, minflt: 0, peakFds: 0, samples: 0, rssTrace: [] };
  const t0 = Date.now();
  const threads = threadTracker(pid);
  const tick = () => {
    const p = readProc(pid);
    if (!p) return;
    threads.update();
    s.threads = threads.byKind();
    s.samples++;
    s.peakRssMB = Math.max(s.peakRssMB, p.rssMB);
    s.hwmMB = Math.max(s.hwmMB, p.hwmMB);
    s.cpuS = p.cpuS;
    s.userS = p.userS;
    s.sysS = p.sysS;
    s.minflt = p.minflt;
    if (s.samples % 10 === 1) s.rssTrace.push([Date.now() - t0, Math.round(p.rssMB)]);
    if (fds) s.peakFds = Math.max(s.peakFds, countFds(pid));
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    stats: s,
    stop() {
      tick();
      clearInterval(timer);
      return s;
    },
  };
}
