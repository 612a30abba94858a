// Placeholder until the cluster API lands: answers no route.
import type { EmuRequest, EmuResponse } from '../types.js';

export interface ClusterApiOptions {
  org: string;
  adminToken: string;
  replicaDelayMs: number;
  now: () => number;
}

export interface ClusterApi {
  /** Answers a request under /v0/organizations/, or null when the path is not a cluster route. */
  handle(req: EmuRequest): Promise<EmuResponse | null>;
}

export function createClusterApi(_opts: ClusterApiOptions): ClusterApi {
  return { handle: async () => null };
}
