// compression.threads: how many compressions run at once (parts of zstd
// batches: parts.ts; whole gzip batches), and how large
// libuv's thread pool is (the compressions run there, beside file reads,
// fsyncs and DNS lookups).
//
// `auto` is the number of CPUs this process may use, as the kernel will
// actually give them: the smallest of the CPU affinity (sched_getaffinity,
// through os.availableParallelism) and the CFS quota of its cgroup and every
// cgroup above it (v2: cpu.max "QUOTA PERIOD"; v1: cpu.cfs_quota_us /
// cpu.cfs_period_us), rounded up, at least 1. A Kubernetes limit of 2 CPUs on
// a 16-core node gives 2; a `taskset -c 0-3` gives 4. The same rule as
// Go's GOMAXPROCS under automaxprocs and the JVM's container support.
//
// libuv creates its pool once, at its first use, from UV_THREADPOOL_SIZE;
// under an ES module entry that happens before any of our code runs, so the
// pool is sized by whoever starts node: the launcher (scripts/build.mjs) and
// the re-execution of `run` (cli/memory.ts). A UV_THREADPOOL_SIZE the user
// set is kept.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface CpuLimit {
  cpus: number;
  /** What bound it: `affinity` (or the machine), `cgroup v2 cpu.max`, `cgroup v1 cfs quota`. */
  source: 'affinity' | 'cgroup v2 cpu.max' | 'cgroup v1 cfs quota';
}

export interface CpuProbe {
  /** Prepended to /proc and /sys paths (tests give a fake tree). */
  root?: string;
  /** CPUs of the affinity mask (default: os.availableParallelism()). */
  affinity?: number;
}

/** The CPUs this process may use: affinity and every cgroup quota above it, at least 1. */
export function cpuLimit(probe: CpuProbe = {}): CpuLimit {
  const root = probe.root ?? '/';
  const affinity = Math.max(1, probe.affinity ?? os.availableParallelism());
  const quota = cgroupV2Quota(root) ?? cgroupV1Quota(root);
  if (quota && quota.cpus < affinity) return quota;
  return { cpus: affinity, source: 'affinity' };
}

/** The thread count for a compression.threads setting. */
export function compressionThreads(setting: number | 'auto', probe?: CpuProbe): { threads: number; limit: CpuLimit | null } {
  if (setting !== 'auto') return { threads: setting, limit: null };
  const limit = cpuLimit(probe);
  return { threads: limit.cpus, limit };
}

/**
 * libuv's pool for `threads` compressions: two more threads, so that a file
 * read, an fsync or a DNS lookup never queues behind every compression, and
 * never fewer than libuv's own default of 4.
 */
export function threadpoolSize(threads: number): number {
  return Math.max(4, threads + 2);
}

/** The pool this process has: UV_THREADPOOL_SIZE as libuv reads it (1..1024), else libuv's 4. */
export function currentThreadpoolSize(env: NodeJS.ProcessEnv): number {
  const n = Number.parseInt(env.UV_THREADPOOL_SIZE ?? '', 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, 1024) : 4;
}

/**
 * Who sized the pool: `user` (UV_THREADPOOL_SIZE set, and not by us),
 * `spoolship` (the launcher or the re-execution: _SPOOLSHIP_POOL names the
 * value it set), or `libuv` (nobody: its default of 4).
 */
export function threadpoolOrigin(env: NodeJS.ProcessEnv): 'user' | 'spoolship' | 'libuv' {
  if (env.UV_THREADPOOL_SIZE === undefined || env.UV_THREADPOOL_SIZE === '') return 'libuv';
  return env._SPOOLSHIP_POOL === env.UV_THREADPOOL_SIZE ? 'spoolship' : 'user';
}

/**
 * What the start log says of the threads and the pool (`fields`), and, when
 * the pool is smaller than the threads want (Node 20 without the spoolship
 * launcher, a small UV_THREADPOOL_SIZE, a SIGHUP that raised
 * compression.threads), the WARN's words: the compressions would queue
 * behind each other and file reads behind them.
 */
export function threadpoolReport(
  resolved: { threads: number; limit: CpuLimit | null },
  env: NodeJS.ProcessEnv,
): { fields: Record<string, unknown>; wanted: number; small: string | null } {
  const pool = currentThreadpoolSize(env);
  const wanted = threadpoolSize(resolved.threads);
  const fields = {
    compression_threads: resolved.threads,
    threads_from: resolved.limit ? `auto: ${resolved.limit.source}` : 'compression.threads',
    threadpool: pool,
    threadpool_from: threadpoolOrigin(env),
  };
  const small =
    pool >= wanted
      ? null
      : `libuv's thread pool has ${pool} threads for ${resolved.threads} compressions (${wanted} wanted): start spoolship as a program (the spoolship command), on Node >= 22.15, or with UV_THREADPOOL_SIZE=${wanted}`;
  return { fields, wanted, small };
}

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The cgroup paths of /proc/self/cgroup: `0::/x` (v2) and `N:cpu,cpuacct:/x` (v1, by controller). */
function ownCgroups(root: string): { v2: string | null; v1cpu: string | null } {
  const text = read(path.join(root, 'proc/self/cgroup')) ?? '';
  let v2: string | null = null;
  let v1cpu: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2 = m[3]!;
    else if (m[2]!.split(',').includes('cpu')) v1cpu = m[3]!;
  }
  return { v2, v1cpu };
}

/**
 * The directories from `mount/cgroupPath` up to `mount`. In a container the
 * path may be the host's while the mount shows the container's own cgroup
 * at its top: then only the mount itself is looked at.
 */
function cgroupChain(mount: string, cgroupPath: string): string[] {
  const own = path.join(mount, cgroupPath);
  const start = read(own) !== null || dirExists(own) ? own : mount;
  const chain: string[] = [];
  for (let dir = start; ; dir = path.dirname(dir)) {
    chain.push(dir);
    if (dir === mount || !dir.startsWith(mount)) break;
  }
  return chain;
}

function dirExists(dir: string): boolean {
  return read(path.join(dir, 'cgroup.procs')) !== null || read(path.join(dir, 'cpu.max')) !== null || read(path.join(dir, 'cpu.cfs_quota_us')) !== null;
}

function cpusOf(quota: number, period: number): number | null {
  if (!(quota > 0) || !(period > 0)) return null;
  return Math.max(1, Math.ceil(quota / period));
}

function cgroupV2Quota(root: string): CpuLimit | null {
  const mount = path.join(root, 'sys/fs/cgroup');
  // Only a pure v2 hierarchy has cgroup.controllers at the top (hybrid hosts keep cpu in v1).
  if (read(path.join(mount, 'cgroup.controllers')) === null) return null;
  const { v2 } = ownCgroups(root);
  if (v2 === null) return null;
  let best: number | null = null;
  for (const dir of cgroupChain(mount, v2)) {
    const [q, p] = (read(path.join(dir, 'cpu.max')) ?? '').trim().split(/\s+/);
    const cpus = q === undefined || q === 'max' ? null : cpusOf(Number(q), Number(p ?? 100_000));
    if (cpus !== null) best = best === null ? cpus : Math.min(best, cpus);
  }
  return best === null ? null : { cpus: best, source: 'cgroup v2 cpu.max' };
}

function cgroupV1Quota(root: string): CpuLimit | null {
  const { v1cpu } = ownCgroups(root);
  if (v1cpu === null) return null;
  const base = path.join(root, 'sys/fs/cgroup');
  const mount = ['cpu,cpuacct', 'cpuacct,cpu', 'cpu'].map((m) => path.join(base, m)).find((m) => read(path.join(m, 'cpu.cfs_period_us')) !== null);
  if (!mount) return null;
  let best: number | null = null;
  for (const dir of cgroupChain(mount, v1cpu)) {
    const cpus = cpusOf(Number((read(path.join(dir, 'cpu.cfs_quota_us')) ?? '').trim()), Number((read(path.join(dir, 'cpu.cfs_period_us')) ?? '').trim()));
    if (cpus !== null) best = best === null ? cpus : Math.min(best, cpus);
  }
  return best === null ? null : { cpus: best, source: 'cgroup v1 cfs quota' };
}
