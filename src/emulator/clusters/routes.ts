// Path matching for the cluster API. A trailing slash is accepted on every
// route, and on POST .../replicas an extra path segment, as the platform's
// route patterns permit (docs/clusters.md, "The emulator's cluster API");
// the segment carries no meaning and is ignored.

export type ClusterRoute =
  | { kind: 'list'; org: string }
  | { kind: 'configuration'; org: string }
  | { kind: 'weights'; org: string; clusterId: string }
  | { kind: 'replicas'; org: string; clusterId: string; segment: string | null };

const PREFIX = '/v0/organizations/';

/** The route of `path`, or null when it is not a cluster route. */
export function matchClusterRoute(path: string): ClusterRoute | null {
  if (!path.startsWith(PREFIX)) return null;
  const raw = path.slice(PREFIX.length).split('/');
  if (raw.length > 1 && raw[raw.length - 1] === '') raw.pop();
  let seg: string[];
  try {
    seg = raw.map((s) => decodeURIComponent(s));
  } catch {
    return null; // malformed %-escape: no such resource
  }
  if (seg.some((s) => s === '')) return null;
  const [org, collection, clusterId, sub, extra, ...rest] = seg as [string, ...(string | undefined)[]];
  if (rest.length > 0) return null;
  if (collection === 'clusters-configuration' && clusterId === undefined) return { kind: 'configuration', org };
  if (collection !== 'clusters') return null;
  if (clusterId === undefined) return { kind: 'list', org };
  if (sub === 'weights' && extra === undefined) return { kind: 'weights', org, clusterId };
  if (sub === 'replicas') return { kind: 'replicas', org, clusterId, segment: extra ?? null };
  return null;
}

/** Methods each route answers; anything else is 405. */
export function allowedMethods(route: ClusterRoute): string[] {
  switch (route.kind) {
    case 'list':
    case 'configuration':
      return ['GET'];
    case 'weights':
      return ['PUT'];
    case 'replicas':
      // POST .../replicas[/extra] adds; DELETE .../replicas/<name> removes.
      return route.segment === null ? ['POST'] : ['POST', 'DELETE'];
  }
}
