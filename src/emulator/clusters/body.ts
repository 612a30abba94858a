// Strict checks of request bodies. Each returns an error message for a 400,
// or null. The service documents no sum rule for weights (that rule is the
// CLI's), so only the shape is enforced here: integer weights >= 0 of known
// roles and existing replicas.
import type { Weights } from '../../clusters/types.js';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Shape of a weights object: role -> (replica -> integer >= 0). */
export function checkWeightsShape(v: unknown, field: string): string | null {
  if (!isPlainObject(v)) return `${field} must be an object of role -> (replica -> weight)`;
  for (const [role, m] of Object.entries(v)) {
    if (!isPlainObject(m)) return `${field}.${role} must be an object of replica -> weight`;
    for (const [replica, w] of Object.entries(m)) {
      if (typeof w !== 'number' || !Number.isInteger(w) || w < 0) {
        return `${field}.${role}.${replica} must be an integer >= 0, got ${JSON.stringify(w)}`;
      }
    }
  }
  return null;
}

/** Shape of `new_replica`: role -> integer >= 0. */
export function checkRoleWeights(v: unknown, field: string): string | null {
  if (!isPlainObject(v)) return `${field} must be an object of role -> weight`;
  for (const [role, w] of Object.entries(v)) {
    if (typeof w !== 'number' || !Number.isInteger(w) || w < 0) {
      return `${field}.${role} must be an integer >= 0, got ${JSON.stringify(w)}`;
    }
  }
  return null;
}

/** Roles must be manageable roles; replicas must exist. */
export function checkWeightsKnown(w: Weights, field: string, roles: string[], replicas: Set<string>): string | null {
  for (const [role, m] of Object.entries(w)) {
    if (!roles.includes(role)) return `${field}: unknown role '${role}'; available roles: ${roles.join(', ')}`;
    for (const replica of Object.keys(m)) {
      if (!replicas.has(replica)) return `${field}.${role}: unknown replica '${replica}'`;
    }
  }
  return null;
}

/** Order-insensitive equality; a role with no entries differs from a missing role. */
export function sameWeights(a: Weights, b: Weights): boolean {
  const ra = Object.keys(a);
  if (ra.length !== Object.keys(b).length) return false;
  return ra.every((role) => {
    const ma = a[role]!;
    const mb = b[role];
    if (!mb || Object.keys(ma).length !== Object.keys(mb).length) return false;
    return Object.entries(ma).every(([replica, w]) => mb[replica] === w);
  });
}

/** Bodies are weights objects (3 levels); anything far deeper is hostile. */
export const MAX_JSON_DEPTH = 32;

/**
 * True when the JSON text nests objects/arrays deeper than `maxDepth`. Checked
 * before parsing: a 1 MB body of nested objects parses, but every recursive
 * walk of it (validation, JSON.stringify in an error message) overflows the
 * stack, which used to answer 500.
 */
export function nestsDeeperThan(buf: Buffer, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (inString) {
      if (b === 0x5c) i += 1; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
    } else if (b === 0x7b || b === 0x5b) {
      if (++depth > maxDepth) return true;
    } else if (b === 0x7d || b === 0x5d) {
      depth -= 1;
    }
  }
  return false;
}

export function field(body: unknown, name: string): unknown {
  return isPlainObject(body) ? body[name] : undefined;
}

export { isPlainObject };
