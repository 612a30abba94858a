// The three modifying endpoints. Checks run in this order: body shape (400),
// cluster busy or not allowed (409), old_weights stale (409 with
// current_weights), then meaning (unknown replica/role, removed replica still
// in new_weights, size not offered: 400). Stale weights come before meaning so
// that a client planning from an old listing is told to re-read, not that its
// plan is wrong.
import type { ClusterConfiguration, Weights } from '../../clusters/types.js';
import type { EmuResponse } from '../types.js';
import { checkRoleWeights, checkWeightsKnown, checkWeightsShape, field, isPlainObject, sameWeights } from './body.js';
import type { ClusterStore } from './store.js';

// new_replica is role -> weight; as a weights object with no replicas it gets the same role check.
const rolesOnly = (m: Record<string, number>): Weights => Object.fromEntries(Object.keys(m).map((role) => [role, {}]));

const bad = (error: string): EmuResponse => ({ status: 400, body: { error } });

function refuseBusy(store: ClusterStore, clusterId: string, need: 'can_rebalance' | 'can_scale'): EmuResponse | null {
  const c = store.get(clusterId)!;
  if (c.operation_in_progress) {
    return { status: 409, body: { error: `an operation is in progress on cluster ${clusterId}; retry when it is done`, current_weights: c.cluster_weights } };
  }
  if (!c[need]) return { status: 409, body: { error: `cluster ${clusterId} does not allow this now (${need} is false)`, current_weights: c.cluster_weights } };
  return null;
}

function refuseStale(store: ClusterStore, clusterId: string, old: Weights): EmuResponse | null {
  const current = store.get(clusterId)!.cluster_weights;
  if (sameWeights(old, current)) return null;
  return { status: 409, body: { error: 'old_weights do not match the current weights of the cluster', current_weights: current } };
}

function replicaNames(store: ClusterStore, clusterId: string): Set<string> {
  return new Set(Object.keys(store.get(clusterId)!.replicas));
}

/** old_weights + new_weights, as sent by PUT weights and DELETE replica. */
function weightPair(body: unknown, prefix = ''): { old: Weights; next: Weights } | string {
  const old = field(body, 'old_weights');
  const next = field(body, 'new_weights');
  const err = checkWeightsShape(old, `${prefix}old_weights`) ?? checkWeightsShape(next, `${prefix}new_weights`);
  return err ?? { old: old as Weights, next: next as Weights };
}

export function putWeights(store: ClusterStore, catalog: ClusterConfiguration, clusterId: string, body: unknown): EmuResponse {
  const pair = weightPair(body);
  if (typeof pair === 'string') return bad(pair);
  const refused = refuseBusy(store, clusterId, 'can_rebalance') ?? refuseStale(store, clusterId, pair.old);
  if (refused) return refused;
  const err = checkWeightsKnown(pair.next, 'new_weights', catalog.available_roles, replicaNames(store, clusterId));
  if (err) return bad(err);
  const updated = store.updateWeights(clusterId, pair.next);
  return { status: 200, body: { cluster_id: clusterId, updated_weights: updated, operation: 'weight_update_requested' } };
}

export function postReplica(store: ClusterStore, catalog: ClusterConfiguration, clusterId: string, body: unknown): EmuResponse {
  const size = field(body, 'replica_size');
  if (typeof size !== 'string') return bad('replica_size must be a string in cpu-memory format, e.g. 16-64');
  const existing = field(body, 'existing_replicas');
  if (!isPlainObject(existing)) return bad('existing_replicas must be an object with old_weights and new_weights');
  const pair = weightPair(existing, 'existing_replicas.');
  if (typeof pair === 'string') return bad(pair);
  const newReplica = field(body, 'new_replica');
  const shapeErr = checkRoleWeights(newReplica, 'new_replica');
  if (shapeErr) return bad(shapeErr);
  const refused = refuseBusy(store, clusterId, 'can_scale') ?? refuseStale(store, clusterId, pair.old);
  if (refused) return refused;
  const provider = store.get(clusterId)!.cloud_provider;
  const offered = catalog.available_sizes[provider] ?? [];
  if (!offered.some((s) => s.name === size)) {
    return bad(`replica_size '${size}' is not available for ${provider}; available: ${offered.map((s) => s.name).join(', ')}`);
  }
  const roles = catalog.available_roles;
  const err =
    checkWeightsKnown(pair.next, 'existing_replicas.new_weights', roles, replicaNames(store, clusterId)) ??
    checkWeightsKnown(rolesOnly(newReplica as Record<string, number>), 'new_replica', roles, new Set());
  if (err) return bad(err);
  const replica = store.addReplica(clusterId, size, pair.next, newReplica as Record<string, number>);
  return { status: 200, body: { cluster_id: clusterId, new_replica: replica, operation: 'replica_add_requested' } };
}

export function deleteReplica(store: ClusterStore, catalog: ClusterConfiguration, clusterId: string, name: string, body: unknown): EmuResponse {
  const names = replicaNames(store, clusterId);
  if (!names.has(name)) return bad(`unknown replica '${name}' in cluster ${clusterId}; replicas: ${[...names].join(', ')}`);
  if (names.size === 1) return bad(`replica '${name}' is the last replica of cluster ${clusterId}; a cluster needs at least one`);
  const pair = weightPair(body);
  if (typeof pair === 'string') return bad(pair);
  const refused = refuseBusy(store, clusterId, 'can_scale') ?? refuseStale(store, clusterId, pair.old);
  if (refused) return refused;
  for (const [role, m] of Object.entries(pair.next)) {
    if (Object.hasOwn(m, name)) return bad(`new_weights.${role} still contains the removed replica '${name}'`);
  }
  names.delete(name);
  const err = checkWeightsKnown(pair.next, 'new_weights', catalog.available_roles, names);
  if (err) return bad(err);
  const updated = store.removeReplica(clusterId, name, pair.next);
  return { status: 200, body: { cluster_id: clusterId, removed_replica: name, updated_weights: updated, operation: 'replica_delete_requested' } };
}
