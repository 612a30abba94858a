// The configuration metadata as the platform's cluster API lists it (the
// sizes and roles docs/clusters.md shows under `config`). The emulator
// is strict: a size or role outside these lists is rejected like the real
// service would reject it.
import type { ClusterConfiguration, ReplicaSize } from '../../clusters/types.js';

function sizes(names: string[]): ReplicaSize[] {
  return names.map((name) => {
    const [cpu, memory] = name.split('-').map(Number);
    return { name, cpu: cpu!, memory_gb: memory! };
  });
}

export function clusterCatalog(): ClusterConfiguration {
  return {
    cloud_regions: {
      aws: ['us-east-1', 'us-west-2', 'eu-central-1', 'eu-west-1', 'ap-east-1'],
      gcp: ['europe-west3', 'us-east4', 'europe-west2', 'northamerica-northeast2'],
    },
    available_sizes: {
      aws: sizes(['4-32', '8-32', '16-64', '32-128', '48-192', '64-256', '96-384', '128-512']),
      gcp: sizes(['4-16', '4-32', '8-32', '16-64', '32-128', '48-192', '64-256', '80-320', '96-384', '128-512']),
    },
    available_roles: ['writer', 'reader', 'copyjob'],
  };
}
