// The cluster API's paths (docs/clusters.md), with every segment percent-encoded so an
// odd organization or replica name cannot change which resource is addressed.
// "." and ".." (percent-encoded or not) are path steps to a URL, not names:
// `--org ..` sent the admin token to /v0/clusters. They are refused.
import { UsageError } from '../errors.js';

function enc(name: string): string {
  if (name === '' || /^(\.|%2e){1,2}$/i.test(name)) throw new UsageError(`'${name}' is not a name (an organization, cluster or replica): it would change which resource the request goes to`);
  return encodeURIComponent(name);
}

export function orgPaths(org: string) {
  const base = `/v0/organizations/${enc(org)}`;
  return { clusters: `${base}/clusters`, configuration: `${base}/clusters-configuration` };
}

export function clusterPaths(org: string, clusterId: string) {
  const base = `/v0/organizations/${enc(org)}/clusters/${enc(clusterId)}`;
  return {
    weights: `${base}/weights`,
    replicas: `${base}/replicas`,
    replica: (name: string) => `${base}/replicas/${enc(name)}`,
  };
}
