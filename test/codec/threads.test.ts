// compression.threads: auto from a fake /proc and /sys tree: cgroup v2
// cpu.max (at the container's top and nested), cgroup v1 CFS quota, no
// limit, and an affinity mask smaller than the quota. Also the pool
// arithmetic and when `run` re-executes to size it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compressionThreads, cpuLimit, currentThreadpoolSize, threadpoolOrigin, threadpoolSize } from '../../src/codec/threads.js';
import { reexecNeeds } from '../../src/cli/memory.js';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A fake root with the given files (paths relative to it). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'spoolship-cgroup-'));
  roots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

describe('cpuLimit', () => {
  it('cgroup v2: the quota at the container top (a Kubernetes limit of 2 CPUs on 16 cores gives 2)', () => {
    const root = tree({ 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/cgroup.controllers': 'cpu memory\n', 'sys/fs/cgroup/cpu.max': '200000 100000\n' });
    expect(cpuLimit({ root, affinity: 16 })).toEqual({ cpus: 2, source: 'cgroup v2 cpu.max' });
  });

  it('cgroup v2: the smallest quota from the own cgroup up, rounded up (1.5 CPUs above an unlimited child gives 2)', () => {
    const root = tree({
      'proc/self/cgroup': '0::/kubepods/pod1/c1\n',
      'sys/fs/cgroup/cgroup.controllers': 'cpu\n',
      'sys/fs/cgroup/cpu.max': 'max 100000\n',
      'sys/fs/cgroup/kubepods/cpu.max': '800000 100000\n',
      'sys/fs/cgroup/kubepods/pod1/cpu.max': '150000 100000\n',
      'sys/fs/cgroup/kubepods/pod1/c1/cpu.max': 'max 100000\n',
    });
    expect(cpuLimit({ root, affinity: 16 })).toEqual({ cpus: 2, source: 'cgroup v2 cpu.max' });
  });

  it('cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us of the cpu controller', () => {
    const root = tree({
      'proc/self/cgroup': '4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n',
      'sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '-1\n',
      'sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
      'sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us': '300000\n',
      'sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us': '100000\n',
    });
    expect(cpuLimit({ root, affinity: 16 })).toEqual({ cpus: 3, source: 'cgroup v1 cfs quota' });
  });

  it("cgroup v1 inside a container: the host's path is not mounted, the mount's top is the container's own", () => {
    const root = tree({
      'proc/self/cgroup': '2:cpu:/kubepods/burstable/pod9/c9\n',
      'sys/fs/cgroup/cpu/cpu.cfs_quota_us': '50000\n',
      'sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
    });
    expect(cpuLimit({ root, affinity: 8 })).toEqual({ cpus: 1, source: 'cgroup v1 cfs quota' });
  });

  it('no limit (v2 max, v1 -1): the affinity, at least 1', () => {
    const v2 = tree({ 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/cgroup.controllers': 'cpu\n', 'sys/fs/cgroup/cpu.max': 'max 100000\n' });
    expect(cpuLimit({ root: v2, affinity: 16 })).toEqual({ cpus: 16, source: 'affinity' });
    const v1 = tree({ 'proc/self/cgroup': '1:cpu:/\n', 'sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', 'sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' });
    expect(cpuLimit({ root: v1, affinity: 0 })).toEqual({ cpus: 1, source: 'affinity' });
    expect(cpuLimit({ root: tree({}), affinity: 3 })).toEqual({ cpus: 3, source: 'affinity' });
  });

  it('an affinity smaller than the quota wins (taskset -c 0-3 in a 8-CPU cgroup gives 4)', () => {
    const root = tree({ 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/cgroup.controllers': 'cpu\n', 'sys/fs/cgroup/cpu.max': '800000 100000\n' });
    expect(cpuLimit({ root, affinity: 4 })).toEqual({ cpus: 4, source: 'affinity' });
  });

  it('compressionThreads: a number is used as given; auto asks the probe', () => {
    const root = tree({ 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/cgroup.controllers': 'cpu\n', 'sys/fs/cgroup/cpu.max': '200000 100000\n' });
    expect(compressionThreads(5, { root, affinity: 16 })).toEqual({ threads: 5, limit: null });
    expect(compressionThreads('auto', { root, affinity: 16 })).toEqual({ threads: 2, limit: { cpus: 2, source: 'cgroup v2 cpu.max' } });
  });
});

describe('the thread pool', () => {
  it('is the threads plus two, at least libuv default of 4', () => {
    expect([1, 2, 3, 8, 16].map(threadpoolSize)).toEqual([4, 4, 5, 10, 18]);
  });

  it('reads what libuv reads, and who set it', () => {
    expect(currentThreadpoolSize({})).toBe(4);
    expect(currentThreadpoolSize({ UV_THREADPOOL_SIZE: '18' })).toBe(18);
    expect(currentThreadpoolSize({ UV_THREADPOOL_SIZE: '5000' })).toBe(1024);
    expect(threadpoolOrigin({})).toBe('libuv');
    expect(threadpoolOrigin({ UV_THREADPOOL_SIZE: '6', _SPOOLSHIP_POOL: '6' })).toBe('spoolship');
    expect(threadpoolOrigin({ UV_THREADPOOL_SIZE: '6' })).toBe('user');
  });

  it('run re-executes for what is missing: memory settings, or a pool of the wanted size unless the user chose one', () => {
    const applied = ['--max-semi-space-size=1'];
    const mem = { MALLOC_ARENA_MAX: '1' };
    expect(reexecNeeds({}, [], 4)).toEqual({ memory: true, pool: true });
    // The launcher's guess matches: nothing to do.
    expect(reexecNeeds({ ...mem, _SPOOLSHIP_REEXECUTED: '1', UV_THREADPOOL_SIZE: '4', _SPOOLSHIP_POOL: '4' }, applied, 4)).toEqual({ memory: false, pool: false });
    // compression.threads: 6 wants 8 where the launcher gave 4.
    expect(reexecNeeds({ ...mem, _SPOOLSHIP_REEXECUTED: '1', UV_THREADPOOL_SIZE: '4', _SPOOLSHIP_POOL: '4' }, applied, 8)).toEqual({ memory: false, pool: true });
    // The user's own size is kept.
    expect(reexecNeeds({ ...mem, UV_THREADPOOL_SIZE: '3' }, applied, 8)).toEqual({ memory: false, pool: false });
  });
});
