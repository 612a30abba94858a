// What an operator reads: the cluster listing, the configuration metadata and
// a change's before/after plan. Weights of every role sit side by side, one
// row per replica; sizes read `cpu-memory`; states are coloured only when the
// caller says the output is a terminal.
import { NEW_REPLICA_KEY, type Plan } from './plan.js';
import { renderTable, type Cell } from './table.js';
import type { Cluster, ClusterConfiguration, ClusterListing, Replica, Weights } from './types.js';

export interface RenderOptions {
  color: boolean;
}

const ROLE_ORDER = ['writer', 'reader', 'copyjob'];

/** Roles in a stable order: the documented ones first, then any other by name. */
export function orderRoles(roles: Iterable<string>): string[] {
  const set = new Set(roles);
  return [...ROLE_ORDER.filter((r) => set.has(r)), ...[...set].filter((r) => !ROLE_ORDER.includes(r)).sort()];
}

export function sizeName(r: Pick<Replica, 'cpu' | 'memory_gb'>): string {
  return `${r.cpu}-${r.memory_gb}`;
}

function stateCell(state: string): Cell {
  return { text: state, color: state === 'running' ? 'green' : state === 'adding' ? 'yellow' : 'red' };
}

function flagsCell(c: Cluster): Cell {
  const flags: string[] = [];
  if (c.operation_in_progress) flags.push('operation_in_progress');
  if (c.can_rebalance) flags.push('can_rebalance');
  if (c.can_scale) flags.push('can_scale');
  if (c.ongoing_maintenance) flags.push('maintenance');
  if (c.error) flags.push(`error: ${c.error}`);
  const color = c.error ? 'red' : c.operation_in_progress || c.ongoing_maintenance ? 'yellow' : undefined;
  return { text: flags.join(' ') || '-', color };
}

const weightText = (w: Weights, role: string, replica: string): string => {
  const v = w[role]?.[replica];
  return v === undefined ? '-' : String(v);
};

export function renderClusters(listing: ClusterListing, org: string, opts: RenderOptions): string {
  if (listing.clusters.length === 0) return `no dedicated clusters in organization ${org}\n`;
  const roles = orderRoles(listing.clusters.flatMap((c) => Object.keys(c.cluster_weights)));
  const header = ['CLUSTER', 'PROVIDER/REGION', 'ENGINE', 'REPLICA', 'SIZE', 'STATE', ...roles.map((r) => r.toUpperCase()), 'FLAGS'];
  const rows: Array<Array<string | Cell>> = [];
  for (const c of listing.clusters) {
    const replicas = Object.values(c.replicas).sort((a, b) => (a.name < b.name ? -1 : 1));
    const head = [c.cluster_id, `${c.cloud_provider}/${c.cloud_region}`, c.engine_version ?? '-'];
    if (replicas.length === 0) rows.push([...head, '-', '-', '-', ...roles.map(() => '-'), flagsCell(c)]);
    replicas.forEach((r, i) => {
      const cells = [r.name, sizeName(r), stateCell(r.state), ...roles.map((role) => weightText(c.cluster_weights, role, r.name))];
      rows.push([...(i === 0 ? head : ['', '', '']), ...cells, i === 0 ? flagsCell(c) : '']);
    });
  }
  const right = new Set(roles.map((_, i) => 6 + i));
  return renderTable(header, rows, { color: opts.color, right });
}

export function renderConfiguration(cfg: ClusterConfiguration, opts: RenderOptions): string {
  const providers = Object.keys({ ...cfg.cloud_regions, ...cfg.available_sizes }).sort();
  const regions = renderTable(['PROVIDER', 'REGIONS'], providers.map((p) => [p, (cfg.cloud_regions[p] ?? []).join(', ') || '-']), opts);
  const sizes = renderTable(
    ['PROVIDER', 'SIZE', 'CPU', 'MEMORY_GB'],
    providers.flatMap((p) => (cfg.available_sizes[p] ?? []).map((s) => [p, s.name, String(s.cpu), String(s.memory_gb)])),
    { ...opts, right: new Set([2, 3]) },
  );
  return `${regions}\n${sizes}\nroles: ${cfg.available_roles.join(', ')}\n`;
}

function change(before: string, after: string): Cell {
  return before === after ? { text: after } : { text: `${before} -> ${after}`, color: 'yellow' };
}

/** Before/after per replica and role, a total per role, and the request that will be sent. */
export function renderPlan(plan: Plan, cluster: Cluster, opts: RenderOptions): string {
  const after: Weights = JSON.parse(JSON.stringify(plan.after)) as Weights;
  for (const [role, w] of Object.entries(plan.new_replica?.weights ?? {})) (after[role] ??= {})[NEW_REPLICA_KEY] = w;
  const roles = orderRoles([...Object.keys(plan.before), ...Object.keys(after)]);
  const names = Object.keys(cluster.replicas).sort();
  if (plan.new_replica) names.push(NEW_REPLICA_KEY);
  const rows = names.map((name) => {
    const size = name === NEW_REPLICA_KEY ? plan.new_replica!.size : sizeName(cluster.replicas[name]!);
    const note = name === NEW_REPLICA_KEY ? 'added' : name === plan.removed_replica ? 'removed' : '';
    const weights = roles.map((role) => change(weightText(plan.before, role, name), weightText(after, role, name)));
    return [name, size, ...weights, note ? { text: note, color: note === 'added' ? ('green' as const) : ('red' as const) } : ''];
  });
  const total = (w: Weights, role: string): string => String(Object.values(w[role] ?? {}).reduce((s, v) => s + v, 0));
  rows.push(['total', '', ...roles.map((role) => change(total(plan.before, role), total(after, role))), '']);
  const header = ['REPLICA', 'SIZE', ...roles.map((r) => r.toUpperCase()), ''];
  const title = `${plan.verb} on cluster ${plan.cluster_id} (organization ${plan.org}):\n`;
  return `${title}${renderTable(header, rows, { color: opts.color, right: new Set(roles.map((_, i) => 2 + i)) })}${plan.request.method} ${plan.request.path}\n`;
}
