// The read-modify-write of a modifying verb (docs/clusters.md):
//   read listing + configuration -> plan -> validate (exit 2) -> preconditions
//   (exit 1) -> show plan -> --dry-run / confirm -> send with old_weights
//   -> on 409: re-read, re-apply the same intent once -> --wait -> output.
// The client never retries; this is the one place that decides to send twice,
// and only after a 409, which means nothing was applied.
import { ApiError, PreconditionError, UsageError } from '../errors.js';
import { isWeights, type ClusterClient } from './client.js';
import { buildPlan, refusal, type Intent, type Plan } from './plan.js';
import { renderPlan } from './render.js';
import type { Cluster, ClusterConfiguration, Weights } from './types.js';

export interface ModifyIo {
  /** Where the plan table goes (stderr with --json, so stdout stays one JSON document). */
  planOut: NodeJS.WritableStream;
  color: boolean;
  /** Asks the operator; null when --yes (or --dry-run) makes asking unnecessary. */
  confirm: ((question: string) => Promise<boolean>) | null;
}

export interface ModifyOptions {
  org: string;
  clusterId: string;
  force: boolean;
  dryRun: boolean;
}

export type ModifyOutcome =
  | { kind: 'dry-run'; plan: Plan }
  /** A rebalance that would set the weights the cluster already has: not sent (it would still start an operation). `replanned`: after a 409. */
  | { kind: 'unchanged'; plan: Plan; replanned: boolean }
  | { kind: 'declined'; plan: Plan; replanned: boolean }
  | { kind: 'applied'; plan: Plan; response: unknown; replanned: boolean };

export async function modifyCluster(client: ClusterClient, intent: Intent, opts: ModifyOptions, io: ModifyIo): Promise<ModifyOutcome> {
  const [listing, config] = await Promise.all([client.listClusters(), client.getConfiguration()]);
  let cluster = findCluster(listing.clusters, opts);
  let refused: Plan | undefined; // the plan a 409 turned down
  for (;;) {
    const plan = preparePlan(intent, cluster, config, opts, io, refused);
    if (plan.verb === 'rebalance' && sameWeights(plan.before, plan.after)) return { kind: 'unchanged', plan, replanned: refused !== undefined };
    if (opts.dryRun) return { kind: 'dry-run', plan };
    const question = `apply ${refused ? 'the re-planned' : 'this'} change to cluster ${opts.clusterId}? [y/N] `;
    if (io.confirm && !(await io.confirm(question))) return { kind: 'declined', plan, replanned: refused !== undefined };
    try {
      return { kind: 'applied', plan, response: await send(client, plan), replanned: refused !== undefined };
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 409) throw err;
      if (refused) throw conflictError(opts.clusterId, plan.before, currentWeightsOf(err) ?? plan.before);
    }
    // 409: the weights moved between our read and our write (nothing was
    // applied). Re-read and apply the same intent to the fresh weights, so
    // another operator's change to other replicas or roles survives. Only
    // once: a second race means the cluster is being changed concurrently
    // and a human should look.
    io.planOut.write('the cluster changed since it was read (another operator?); re-planned on its current weights:\n');
    cluster = findCluster((await client.listClusters()).clusters, opts);
    refused = plan;
  }
}

function sameWeights(a: Weights, b: Weights): boolean {
  const roles = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...roles].every((role) => {
    const ma = a[role] ?? {};
    const mb = b[role] ?? {};
    const names = new Set([...Object.keys(ma), ...Object.keys(mb)]);
    return [...names].every((n) => ma[n] === mb[n]);
  });
}

/** The cluster `opts.clusterId` of the listing; a usage error naming the org's clusters when there is none. */
export function findCluster(clusters: Cluster[], opts: Pick<ModifyOptions, 'clusterId' | 'org'>): Cluster {
  const c = clusters.find((x) => x.cluster_id === opts.clusterId);
  if (c) return c;
  const ids = clusters.map((x) => x.cluster_id).join(', ') || '(none)';
  throw new UsageError(`no cluster '${opts.clusterId}' in organization ${opts.org}; clusters: ${ids}`);
}

/** Plan, validate (exit 2), check preconditions (exit 1), print. `conflictWith`: the plan a 409 refused. */
function preparePlan(intent: Intent, cluster: Cluster, config: ClusterConfiguration, opts: ModifyOptions, io: ModifyIo, conflictWith?: Plan): Plan {
  const { plan, problems } = buildPlan(intent, cluster, config, { org: opts.org, force: opts.force });
  if (problems.length > 0) {
    const list = problems.map((p) => `  ${p}`).join('\n');
    // After a conflict the change no longer fits what the other operator did: that is a runtime failure, not a typo.
    if (conflictWith) throw conflictError(opts.clusterId, conflictWith.before, plan.before, list);
    throw new UsageError(`${intent.verb} on cluster ${opts.clusterId} not sent (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${list}`);
  }
  const refused = refusal(intent.verb, cluster);
  if (refused && !opts.dryRun) throw new PreconditionError(refused);
  io.planOut.write(renderPlan(plan, cluster, { color: io.color }));
  // --dry-run shows the plan on a busy cluster too, then refuses as the change itself would (exit 1).
  if (refused) throw new PreconditionError(`--dry-run: the plan above is what would be sent, but ${refused}`);
  return plan;
}

function send(client: ClusterClient, plan: Plan): Promise<unknown> {
  const r = plan.request;
  if (r.method === 'PUT') return client.updateWeights(plan.cluster_id, r.body);
  if (r.method === 'POST') return client.addReplica(plan.cluster_id, r.body);
  return client.removeReplica(plan.cluster_id, plan.removed_replica!, r.body);
}

function currentWeightsOf(err: ApiError): Weights | null {
  try {
    const weights = (JSON.parse(err.body) as { current_weights?: unknown } | null)?.current_weights;
    return isWeights(weights) ? (weights as Weights) : null;
  } catch {
    return null;
  }
}

export function formatWeights(w: Weights): string {
  return Object.entries(w)
    .map(([role, m]) => `${role}: ${Object.entries(m).map(([r, v]) => `${r}=${v}`).join(' ') || '(none)'}`)
    .join('; ');
}

function conflictError(clusterId: string, planned: Weights, server: Weights, why?: string): PreconditionError {
  return new PreconditionError(
    [
      `cluster ${clusterId} was changed by someone else while this change was being applied; nothing was applied.`,
      ...(why ? [`the change no longer fits the cluster:\n${why}`] : []),
      `  planned from: ${formatWeights(planned)}`,
      `  cluster now:  ${formatWeights(server)}`,
      `check 'spoolship clusters list' and run the command again`,
    ].join('\n'),
  );
}
