// Local checks of a planned change (docs/clusters.md), run before anything is sent.
// They return every problem at once, so the operator fixes them in one go;
// the caller turns a non-empty list into a usage error (exit 2).
import { COPYJOB_ROLE, PERCENT_TOTAL, type ReplicaSize, type Weights } from './types.js';
import { isPercentRole } from './weights.js';

export interface PlanCheck {
  /** Weights of every replica after the change (an added replica under its placeholder key). */
  after: Weights;
  /** Replica names that exist after the change (placeholder included, removed one excluded). */
  replicas: readonly string[];
  availableRoles: readonly string[];
  /** Replica being removed: must appear nowhere in `after`, even with --force. */
  removed?: string;
  /** --force: skip the sum rules (writer/reader 100, copyjob 1 per replica). */
  force: boolean;
}

export function checkPlan(c: PlanCheck): string[] {
  const problems: string[] = [];
  const known = new Set(c.replicas);
  for (const [role, m] of Object.entries(c.after)) {
    if (!c.availableRoles.includes(role)) {
      problems.push(`role '${role}' is not manageable; available roles: ${c.availableRoles.join(', ')}`);
      continue;
    }
    for (const [replica, w] of Object.entries(m)) {
      if (replica === c.removed) problems.push(`${role}: the removed replica '${replica}' must not appear in the new weights`);
      else if (!known.has(replica)) problems.push(`${role}: no replica '${replica}' in this cluster; replicas: ${c.replicas.join(', ')}`);
      if (!Number.isInteger(w) || w < 0) problems.push(`${role}.${replica}: weight ${w} must be an integer >= 0`);
    }
    if (!c.force) problems.push(...sumRule(role, m, c.replicas));
  }
  return problems;
}

function sumRule(role: string, m: Record<string, number>, replicas: readonly string[]): string[] {
  if (isPercentRole(role)) {
    const sum = Object.values(m).reduce((s, w) => s + w, 0);
    return sum === PERCENT_TOTAL ? [] : [`${role}: weights sum to ${sum}, must be ${PERCENT_TOTAL} (${describe(m)}); or pass --force`];
  }
  if (role === COPYJOB_ROLE) {
    const wrong = replicas.filter((r) => m[r] !== 1);
    return wrong.length === 0 ? [] : [`${COPYJOB_ROLE}: must be 1 for every replica, not for ${wrong.join(', ')} (${describe(m)}); or pass --force`];
  }
  return [];
}

function describe(m: Record<string, number>): string {
  const parts = Object.entries(m).map(([r, w]) => `${r}=${w}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/** A size not offered for the provider: the message names it and lists the valid ones. */
export function checkSize(size: string, provider: string, offered: readonly ReplicaSize[]): string | null {
  if (offered.some((s) => s.name === size)) return null;
  const names = offered.map((s) => s.name).join(', ');
  return `size '${size}' is not available for ${provider}; available sizes: ${names || '(none listed)'}`;
}
