// A user's change (Intent) applied to a cluster as read from the listing
// gives a Plan: the weights before and after and the exact request to send.
// Keeping the intent separate from the plan is what lets a 409 conflict be
// handled by re-applying the same intent to fresh weights: replicas and roles
// the user did not touch keep whatever another operator set meanwhile.
import { clusterPaths } from './paths.js';
import type { Cluster, ClusterConfiguration, ReplicaAddBody, Weights, WeightsUpdateBody } from './types.js';
import { checkPlan, checkSize } from './validate.js';
import { applyAdd, applyEven, applyRemove, applySet, cloneWeights, defaultNewReplica, isPercentRole } from './weights.js';

export type Intent =
  /** `sets`: role -> replica -> weight from --set; `even`: roles from --even. */
  | { verb: 'rebalance'; sets: Weights; even: string[] }
  /** `weights`: role -> weight of the new replica from --weight (over the defaults). */
  | { verb: 'add-replica'; size: string; weights: Record<string, number> }
  | { verb: 'remove-replica'; replica: string };

export type PlannedRequest =
  | { method: 'PUT'; path: string; body: WeightsUpdateBody }
  | { method: 'POST'; path: string; body: ReplicaAddBody }
  | { method: 'DELETE'; path: string; body: WeightsUpdateBody };

export interface Plan {
  verb: Intent['verb'];
  org: string;
  cluster_id: string;
  before: Weights;
  /** Weights of the existing replicas after the change (the new replica is in `new_replica`). */
  after: Weights;
  new_replica?: { size: string; weights: Record<string, number> };
  removed_replica?: string;
  request: PlannedRequest;
}

/** Key under which validation sees the added replica (the service names it). */
export const NEW_REPLICA_KEY = '(new)';

/** Current weights: the listing's, unless the configuration endpoint ever returns some (docs/clusters.md). */
export function currentWeights(cluster: Cluster, config: ClusterConfiguration): Weights {
  return cloneWeights(config.cluster_weights?.[cluster.cluster_id] ?? cluster.cluster_weights);
}

/** Why the cluster cannot take this change now, or null. */
export function refusal(verb: Intent['verb'], c: Cluster): string | null {
  if (c.operation_in_progress) {
    return `cluster ${c.cluster_id} has an operation in progress (operation_in_progress is true); wait until 'spoolship clusters list' shows it done, then run again`;
  }
  if (verb === 'rebalance' && !c.can_rebalance) {
    return `cluster ${c.cluster_id} cannot be rebalanced now (can_rebalance is false); try again later or ask the platform's support why`;
  }
  if (verb !== 'rebalance' && !c.can_scale) {
    return `cluster ${c.cluster_id} cannot be scaled now (can_scale is false); try again later or ask the platform's support why`;
  }
  return null;
}

export interface PlanOptions {
  org: string;
  force: boolean;
}

type Planned = { plan: Plan; problems: string[] };

interface PlanContext {
  cluster: Cluster;
  config: ClusterConfiguration;
  opts: PlanOptions;
  before: Weights;
  replicas: string[];
  base: Pick<Plan, 'verb' | 'org' | 'cluster_id' | 'before'>;
}

/** The plan, and every reason it must not be sent (empty when it may). */
export function buildPlan(intent: Intent, cluster: Cluster, config: ClusterConfiguration, opts: PlanOptions): Planned {
  const before = currentWeights(cluster, config);
  const ctx: PlanContext = {
    cluster,
    config,
    opts,
    before,
    replicas: Object.keys(cluster.replicas),
    base: { verb: intent.verb, org: opts.org, cluster_id: cluster.cluster_id, before },
  };
  if (intent.verb === 'rebalance') return planRebalance(intent, ctx);
  if (intent.verb === 'add-replica') return planAdd(intent, ctx);
  return planRemove(intent, ctx);
}

function planRebalance(intent: Extract<Intent, { verb: 'rebalance' }>, ctx: PlanContext): Planned {
  const roles = ctx.config.available_roles;
  const problems: string[] = [];
  let after = applySet(ctx.before, intent.sets);
  for (const role of intent.even) {
    if (!roles.includes(role)) problems.push(`--even ${role}: not a manageable role; available roles: ${roles.join(', ')}`);
    else if (!isPercentRole(role)) problems.push(`--even ${role}: only writer and reader are shared out of 100`);
    else after = applyEven(after, role, ctx.replicas);
  }
  problems.push(...checkPlan({ after, replicas: ctx.replicas, availableRoles: roles, force: ctx.opts.force }));
  const path = clusterPaths(ctx.opts.org, ctx.cluster.cluster_id).weights;
  return { plan: { ...ctx.base, after, request: { method: 'PUT', path, body: { old_weights: ctx.before, new_weights: after } } }, problems };
}

function planAdd(intent: Extract<Intent, { verb: 'add-replica' }>, ctx: PlanContext): Planned {
  const { cluster, config } = ctx;
  const newWeights = { ...defaultNewReplica(ctx.replicas.length), ...intent.weights };
  const after = applyAdd(ctx.before, newWeights, ctx.replicas);
  const withNew = cloneWeights(after);
  for (const [role, w] of Object.entries(newWeights)) (withNew[role] ??= {})[NEW_REPLICA_KEY] = w;
  const sizeProblem = checkSize(intent.size, cluster.cloud_provider, config.available_sizes[cluster.cloud_provider] ?? []);
  const problems = [
    ...(sizeProblem ? [sizeProblem] : []),
    ...checkPlan({ after: withNew, replicas: [...ctx.replicas, NEW_REPLICA_KEY], availableRoles: config.available_roles, force: ctx.opts.force }),
  ];
  const body: ReplicaAddBody = { replica_size: intent.size, existing_replicas: { old_weights: ctx.before, new_weights: after }, new_replica: newWeights };
  const path = clusterPaths(ctx.opts.org, cluster.cluster_id).replicas;
  return { plan: { ...ctx.base, after, new_replica: { size: intent.size, weights: newWeights }, request: { method: 'POST', path, body } }, problems };
}

function planRemove(intent: Extract<Intent, { verb: 'remove-replica' }>, ctx: PlanContext): Planned {
  const removed = intent.replica;
  const id = ctx.cluster.cluster_id;
  const remaining = ctx.replicas.filter((r) => r !== removed);
  const problems: string[] = [];
  if (!ctx.replicas.includes(removed)) problems.push(`no replica '${removed}' in cluster ${id}; replicas: ${ctx.replicas.join(', ')}`);
  else if (remaining.length === 0) problems.push(`'${removed}' is the only replica of cluster ${id}; a cluster needs at least one`);
  const after = applyRemove(ctx.before, removed, remaining);
  problems.push(...checkPlan({ after, replicas: remaining, availableRoles: ctx.config.available_roles, removed, force: ctx.opts.force }));
  const path = clusterPaths(ctx.opts.org, id).replica(removed);
  return {
    plan: { ...ctx.base, after, removed_replica: removed, request: { method: 'DELETE', path, body: { old_weights: ctx.before, new_weights: after } } },
    problems,
  };
}
