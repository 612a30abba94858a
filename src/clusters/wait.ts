// `--wait`: poll the listing until the cluster has no operation in progress
// and every replica is `running`. Time and sleeping are injected so tests
// drive the loop without real delays; the deadline bounds it.
import { PreconditionError, WaitTimeoutError } from '../errors.js';
import type { Progress } from './progress.js';
import type { Cluster, ClusterListing } from './types.js';

export interface WaitOptions {
  timeoutMs: number;
  pollIntervalMs: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  progress: Progress;
}

export function isSettled(c: Cluster): boolean {
  return !c.operation_in_progress && Object.values(c.replicas).every((r) => r.state === 'running');
}

export function describeStatus(c: Cluster): string {
  const busy = c.operation_in_progress ? ['operation in progress'] : [];
  const replicas = Object.values(c.replicas)
    .filter((r) => r.state !== 'running')
    .map((r) => `${r.name} ${r.state}`);
  return [...busy, ...replicas].join(', ') || 'settled';
}

export async function waitUntilSettled(list: () => Promise<ClusterListing>, clusterId: string, opts: WaitOptions): Promise<Cluster> {
  const start = opts.now();
  for (;;) {
    const cluster = (await list()).clusters.find((c) => c.cluster_id === clusterId);
    if (!cluster) throw new PreconditionError(`cluster ${clusterId} is no longer in the listing; check 'spoolship clusters list'`);
    const elapsedMs = opts.now() - start;
    if (isSettled(cluster)) {
      opts.progress.done(`cluster ${clusterId}: done, every replica running (${Math.round(elapsedMs / 1000)} s)`);
      return cluster;
    }
    opts.progress.update(`waiting for cluster ${clusterId}: ${describeStatus(cluster)}`);
    if (elapsedMs >= opts.timeoutMs) {
      opts.progress.done(`cluster ${clusterId}: still ${describeStatus(cluster)}`);
      throw new WaitTimeoutError(
        `cluster ${clusterId} did not settle within ${opts.timeoutMs} ms (${describeStatus(cluster)}); the change was accepted and goes on: check 'spoolship clusters list', or wait longer with --wait-timeout-ms`,
      );
    }
    await opts.sleep(Math.min(opts.pollIntervalMs, opts.timeoutMs - elapsedMs));
  }
}
