// Wire format of the cluster-management API (docs/clusters.md). One definition shared by the client, the planner and the
// emulator, so the emulator cannot drift from what the client sends.

/** role name -> (replica name -> integer weight). */
export type Weights = Record<string, Record<string, number>>;

export type ReplicaState = 'running' | 'adding' | (string & {});

export interface Replica {
  name: string;
  cpu: number;
  memory_gb: number;
  state: ReplicaState;
}

export interface Cluster {
  cluster_id: string;
  cluster_name: string;
  cloud_provider: string;
  cloud_region: string;
  operation_in_progress: boolean;
  can_rebalance: boolean;
  can_scale: boolean;
  cluster_weights: Weights;
  replicas: Record<string, Replica>;
  error: string | null;
  ongoing_maintenance: boolean;
  engine_version: string | null;
  available_engine_versions: string[];
  rolling_update_config: Record<string, unknown> | null;
}

export interface ClusterListing {
  clusters: Cluster[];
}

export interface ReplicaSize {
  /** `cpu-memory`, e.g. `16-64`. */
  name: string;
  cpu: number;
  memory_gb: number;
}

export interface ClusterConfiguration {
  cloud_regions: Record<string, string[]>;
  available_sizes: Record<string, ReplicaSize[]>;
  available_roles: string[];
  /** Not documented; used as the current weights if the service ever returns it (docs/clusters.md). */
  cluster_weights?: Record<string, Weights>;
}

export interface WeightsUpdateBody {
  old_weights: Weights;
  new_weights: Weights;
}

export interface ReplicaAddBody {
  replica_size: string;
  existing_replicas: { old_weights: Weights; new_weights: Weights };
  /** role -> weight of the new replica. */
  new_replica: Record<string, number>;
}

export type ReplicaDeleteBody = WeightsUpdateBody;

export interface WeightsUpdateResponse {
  cluster_id: string;
  updated_weights: Weights;
  operation: 'weight_update_requested';
}

export interface ReplicaAddResponse {
  cluster_id: string;
  new_replica: Replica;
  operation: 'replica_add_requested';
}

export interface ReplicaDeleteResponse {
  cluster_id: string;
  removed_replica: string;
  updated_weights: Weights;
  operation: 'replica_delete_requested';
}

/** The body of a 409 answer to a modifying request when `old_weights` is stale. */
export interface ConflictBody {
  error: string;
  current_weights: Weights;
}

/** Roles whose weights of all replicas sum to 100 (docs/clusters.md, from the doc's examples). */
export const PERCENT_ROLES = ['writer', 'reader'] as const;
/** Role whose weight is 1 per replica. */
export const COPYJOB_ROLE = 'copyjob';
/** Total of a percent role. */
export const PERCENT_TOTAL = 100;
