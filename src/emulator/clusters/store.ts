// The emulated organization's clusters. Time is never driven by timers: a
// modification records until when the cluster is busy and when an added
// replica is ready, and every read derives `operation_in_progress`,
// `can_*` and replica states from `now()`. So tests move an injected clock
// instead of sleeping, and a stopped emulator leaves nothing scheduled.
import type { Cluster, Replica, Weights } from '../../clusters/types.js';
import { cloneWeights } from '../../clusters/weights.js';
import { seedClusters } from './seed.js';

interface ReplicaRecord {
  name: string;
  cpu: number;
  memory_gb: number;
  /** `adding` until this instant (ms), `running` from then on. */
  readyAt: number;
}

/** Test overrides of the derived flags; undefined = derived from the clock. */
export interface ClusterFlags {
  operation_in_progress?: boolean;
  can_rebalance?: boolean;
  can_scale?: boolean;
  ongoing_maintenance?: boolean;
  error?: string | null;
}

interface ClusterRecord {
  meta: Pick<
    Cluster,
    'cluster_id' | 'cluster_name' | 'cloud_provider' | 'cloud_region' | 'engine_version' | 'available_engine_versions'
  >;
  replicas: Map<string, ReplicaRecord>;
  weights: Weights;
  busyUntil: number;
  flags: ClusterFlags;
}

function parseSize(size: string): { cpu: number; memory_gb: number } {
  const [cpu, memory] = size.split('-').map(Number);
  return { cpu: cpu!, memory_gb: memory! };
}

export class ClusterStore {
  private readonly clusters = new Map<string, ClusterRecord>();

  constructor(
    private readonly now: () => number,
    private readonly delayMs: number,
  ) {
    for (const seed of seedClusters()) {
      const { replicas, weights, ...meta } = seed;
      this.clusters.set(seed.cluster_id, {
        meta,
        replicas: new Map(replicas.map((r) => [r.name, { name: r.name, ...parseSize(r.size), readyAt: 0 }])),
        weights: cloneWeights(weights),
        busyUntil: 0,
        flags: {},
      });
    }
  }

  has(clusterId: string): boolean {
    return this.clusters.has(clusterId);
  }

  list(): Cluster[] {
    return [...this.clusters.values()].map((c) => this.view(c));
  }

  get(clusterId: string): Cluster | undefined {
    const c = this.clusters.get(clusterId);
    return c && this.view(c);
  }

  /** Replaces the weights (the PUT, or a test playing "another operator"). */
  setWeights(clusterId: string, weights: Weights): void {
    this.record(clusterId).weights = cloneWeights(weights);
  }

  setFlags(clusterId: string, flags: ClusterFlags): void {
    const c = this.record(clusterId);
    c.flags = { ...c.flags, ...flags };
  }

  updateWeights(clusterId: string, weights: Weights): Weights {
    const c = this.record(clusterId);
    c.weights = cloneWeights(weights);
    this.markBusy(c);
    return cloneWeights(c.weights);
  }

  addReplica(clusterId: string, size: string, weights: Weights, newReplica: Record<string, number>): Replica {
    const c = this.record(clusterId);
    const name = this.nextReplicaName(c);
    const rec: ReplicaRecord = { name, ...parseSize(size), readyAt: this.now() + this.delayMs };
    c.replicas.set(name, rec);
    c.weights = cloneWeights(weights);
    for (const [role, w] of Object.entries(newReplica)) (c.weights[role] ??= {})[name] = w;
    this.markBusy(c);
    // The answer describes the replica as requested: `adding` (docs/clusters.md "The emulator's cluster API"),
    // even when --replica-delay-ms 0 makes the listing say `running` at once.
    return { ...this.replicaView(rec), state: 'adding' };
  }

  removeReplica(clusterId: string, name: string, weights: Weights): Weights {
    const c = this.record(clusterId);
    c.replicas.delete(name);
    c.weights = cloneWeights(weights);
    this.markBusy(c);
    return cloneWeights(c.weights);
  }

  private markBusy(c: ClusterRecord): void {
    c.busyUntil = this.now() + this.delayMs;
  }

  // Names are never reused while the replica exists; `replica-N` with the
  // smallest free N keeps names short and sortable for small clusters.
  private nextReplicaName(c: ClusterRecord): string {
    let n = c.replicas.size + 1;
    while (c.replicas.has(`replica-${n}`)) n++;
    return `replica-${n}`;
  }

  private record(clusterId: string): ClusterRecord {
    const c = this.clusters.get(clusterId);
    if (!c) throw new Error(`emulator: no cluster ${clusterId}`);
    return c;
  }

  private replicaView(r: ReplicaRecord): Replica {
    return { name: r.name, cpu: r.cpu, memory_gb: r.memory_gb, state: this.now() < r.readyAt ? 'adding' : 'running' };
  }

  private view(c: ClusterRecord): Cluster {
    const busy = c.flags.operation_in_progress ?? this.now() < c.busyUntil;
    return {
      ...c.meta,
      available_engine_versions: [...c.meta.available_engine_versions],
      operation_in_progress: busy,
      can_rebalance: c.flags.can_rebalance ?? !busy,
      can_scale: c.flags.can_scale ?? !busy,
      cluster_weights: cloneWeights(c.weights),
      replicas: Object.fromEntries([...c.replicas.values()].map((r) => [r.name, this.replicaView(r)])),
      error: c.flags.error ?? null,
      ongoing_maintenance: c.flags.ongoing_maintenance ?? false,
      rolling_update_config: null,
    };
  }
}
