// The cluster API's paths (docs/clusters.md), with every segment percent-encoded so an
// odd organization or replica name cannot change which resource is addressed.
const enc = encodeURIComponent;

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
