// Grammar of the weight flags (docs/clusters.md). Syntax errors are usage errors
// (exit 2) naming the offending text; whether roles and replicas exist is
// checked later against the cluster (validate.ts).
//
//   --set ROLE=REPLICA:W[,REPLICA:W...][,ROLE=REPLICA:W...]   (repeatable)
//   --weight ROLE=W[,ROLE=W...]                               (repeatable)
import { UsageError } from '../errors.js';
import type { Weights } from './types.js';

const WEIGHT = /^\d+$/;

function weightOf(text: string, flag: string, item: string): number {
  if (!WEIGHT.test(text)) throw new UsageError(`${flag} '${item}': weight '${text}' must be an integer >= 0`);
  return Number(text);
}

/** `--set` values to role -> replica -> weight. A replica set twice in one role is an error, not "last wins". */
export function parseSets(values: readonly string[]): Weights {
  const sets: Weights = {};
  for (const value of values) {
    let role: string | null = null;
    for (const item of value.split(',')) {
      const eq = item.indexOf('=');
      let rest = item;
      if (eq >= 0) {
        role = item.slice(0, eq).trim();
        rest = item.slice(eq + 1);
      }
      if (!role) throw new UsageError(`--set '${value}': start with a role, e.g. --set writer=replica-1:60,replica-2:40`);
      const colon = rest.lastIndexOf(':');
      const replica = colon > 0 ? rest.slice(0, colon).trim() : '';
      if (!replica) throw new UsageError(`--set '${item}': expected REPLICA:WEIGHT, e.g. replica-1:60`);
      const m = (sets[role] ??= {});
      if (Object.hasOwn(m, replica)) throw new UsageError(`--set: ${role} weight of '${replica}' is given twice`);
      m[replica] = weightOf(rest.slice(colon + 1).trim(), '--set', item);
    }
  }
  return sets;
}

/** `--weight` values to role -> weight of the new replica. */
export function parseRoleWeights(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const value of values) {
    for (const item of value.split(',')) {
      const eq = item.indexOf('=');
      const role = eq > 0 ? item.slice(0, eq).trim() : '';
      if (!role) throw new UsageError(`--weight '${item}': expected ROLE=WEIGHT, e.g. --weight reader=25`);
      if (Object.hasOwn(out, role)) throw new UsageError(`--weight: role '${role}' is given twice`);
      out[role] = weightOf(item.slice(eq + 1).trim(), '--weight', item);
    }
  }
  return out;
}

/** A positive integer flag value (milliseconds). */
export function parsePositiveInt(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) <= 0) throw new UsageError(`${flag} '${text}': must be a positive integer (milliseconds)`);
  return Number(text);
}
