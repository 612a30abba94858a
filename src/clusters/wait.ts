// `--wait`: poll the listing until the cluster (or, for `list` without
// `--cluster`, every cluster) has no operation in progress and every replica
// is `running`. Time and sleeping are injected so tests
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

/**
 * Poll until the cluster (null: every cluster of the listing) is settled.
 * `afterChange`: a change was accepted (the timeout says it goes on).
 */
export async function waitUntilSettled(list: () => Promise<ClusterListing>, clusterId: string | null, opts: WaitOptions & { afterChange?: boolean }): Promise<void> {
  const start = opts.now();
  const name = clusterId === null ? 'every cluster' : `cluster ${clusterId}`;
  for (;;) {
    const listing = await list();
    const clusters = clusterId === null ? listing.clusters : listing.clusters.filter((c) => c.cluster_id === clusterId);
    if (clusterId !== null && clusters.length === 0) throw new PreconditionError(`cluster ${clusterId} is no longer in the listing; check 'spoolship clusters list'`);
    const busy = clusters.find((c) => !isSettled(c));
    const elapsedMs = opts.now() - start;
    if (!busy) {
      opts.progress.done(`${name}: done, every replica running (${Math.round(elapsedMs / 1000)} s)`);
      return;
    }
    opts.progress.update(`waiting for cluster ${busy.cluster_id}: ${describeStatus(busy)}`);
    if (elapsedMs >= opts.timeoutMs) {
      opts.progress.done(`cluster ${busy.cluster_id}: still ${describeStatus(busy)}`);
      const next = opts.afterChange === false ? "check 'spoolship clusters list'" : "the change was accepted and goes on: check 'spoolship clusters list'";
      throw new WaitTimeoutError(`cluster ${busy.cluster_id} did not settle within ${opts.timeoutMs} ms (${describeStatus(busy)}); ${next}, or wait longer with --wait-timeout-ms`);
    }
    await opts.sleep(Math.min(opts.pollIntervalMs, opts.timeoutMs - elapsedMs));
  }
}
