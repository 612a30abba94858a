// Pure weight arithmetic of docs/clusters.md. Every function returns new
// objects and integer weights. Rounding is largest remainder computed on
// integers (no floating point), with ties broken by replica name, so the
// same input always gives the same plan on every machine.
//
// Where the contract is silent (documented in docs/clusters.md):
// - `writer` and `reader` always land on exactly 100, so a cluster whose
//   weights were forced off 100 is normalized instead of refused;
// - a share that has nobody to go to proportionally (all others weigh 0, or
//   nobody else is in the role) is split evenly, remainder in name order;
// - name order is plain code-unit order (`replica-10` < `replica-2`).
import { COPYJOB_ROLE, PERCENT_ROLES, PERCENT_TOTAL, type Weights } from './types.js';

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function isPercentRole(role: string): boolean {
  return (PERCENT_ROLES as readonly string[]).includes(role);
}

/** `total` split into equal integer shares; the remainder goes one each to the first names in name order. */
export function evenShares(names: readonly string[], total: number): Record<string, number> {
  const sorted = [...names].sort(byName);
  const base = Math.floor(total / sorted.length);
  const extra = total - base * sorted.length;
  return Object.fromEntries(sorted.map((n, i) => [n, base + (i < extra ? 1 : 0)]));
}

/**
 * Scale integer weights to sum exactly `total`, in proportion, by largest
 * remainder (ties by name). All-zero weights are split evenly.
 */
export function apportion(weights: Readonly<Record<string, number>>, total: number): Record<string, number> {
  const names = Object.keys(weights).sort(byName);
  if (names.length === 0) return {};
  const sum = names.reduce((s, n) => s + weights[n]!, 0);
  if (sum === 0) return evenShares(names, total);
  // quota_i = w_i * total / sum: floor and remainder kept as integers over the common denominator `sum`.
  const parts = names.map((n) => ({ n, floor: Math.floor((weights[n]! * total) / sum), rem: (weights[n]! * total) % sum }));
  let left = total - parts.reduce((s, p) => s + p.floor, 0);
  const order = [...parts].sort((a, b) => b.rem - a.rem || byName(a.n, b.n));
  for (const p of order) {
    if (left === 0) break;
    p.floor += 1;
    left -= 1;
  }
  return Object.fromEntries(parts.map((p) => [p.n, p.floor]));
}

export function cloneWeights(w: Readonly<Weights>): Weights {
  return Object.fromEntries(Object.entries(w).map(([role, m]) => [role, { ...m }]));
}

/** `--set`: listed replicas take the given weight; everything else is kept. */
export function applySet(current: Readonly<Weights>, sets: Readonly<Weights>): Weights {
  const next = cloneWeights(current);
  for (const [role, m] of Object.entries(sets)) next[role] = { ...(next[role] ?? {}), ...m };
  return next;
}

/** `--even ROLE`: every replica of the cluster gets an equal share of 100. */
export function applyEven(current: Readonly<Weights>, role: string, replicas: readonly string[]): Weights {
  const next = cloneWeights(current);
  next[role] = evenShares(replicas, PERCENT_TOTAL);
  return next;
}

/**
 * `remove-replica`: the removed replica leaves every role. In `writer` and
 * `reader` its share goes to the others in proportion to their weights (to
 * every remaining replica when nobody else is in the role); `copyjob` and any
 * other role simply lose the entry.
 */
export function applyRemove(current: Readonly<Weights>, removed: string, remaining: readonly string[]): Weights {
  const next: Weights = {};
  for (const [role, m] of Object.entries(current)) {
    const others = Object.fromEntries(Object.entries(m).filter(([n]) => n !== removed));
    if (!isPercentRole(role)) next[role] = others;
    else if (Object.keys(others).length > 0) next[role] = apportion(others, PERCENT_TOTAL);
    else next[role] = remaining.length > 0 ? evenShares(remaining, PERCENT_TOTAL) : {};
  }
  return next;
}

/** Default weights of an added replica among `existingCount` others (docs/clusters.md). */
export function defaultNewReplica(existingCount: number): Record<string, number> {
  return { writer: 0, reader: Math.round(PERCENT_TOTAL / (existingCount + 1)), [COPYJOB_ROLE]: 1 };
}

/**
 * `add-replica`: in `writer` and `reader` the existing replicas are scaled to
 * leave room for the new replica's weight (100 - w, by largest remainder); a
 * role nobody is in yet is shared evenly among all existing replicas. Other
 * roles are unchanged. Returns the existing replicas' new weights.
 */
export function applyAdd(current: Readonly<Weights>, newReplica: Readonly<Record<string, number>>, existing: readonly string[]): Weights {
  const next = cloneWeights(current);
  for (const [role, m] of Object.entries(next)) {
    if (!isPercentRole(role)) continue;
    const members = Object.keys(m).length > 0 ? m : Object.fromEntries(existing.map((n) => [n, 0]));
    next[role] = apportion(members, Math.max(0, PERCENT_TOTAL - (newReplica[role] ?? 0)));
  }
  return next;
}
