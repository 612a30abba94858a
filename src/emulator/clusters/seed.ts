// The organization every emulator starts with: one aws and one gcp cluster,
// described in docs/clusters.md, "The emulator's cluster API" (writer and
// reader weights sum to 100, copyjob is 1 per replica).
import type { Weights } from '../../clusters/types.js';

export interface SeedReplica {
  name: string;
  size: string;
}

export interface SeedCluster {
  cluster_id: string;
  cluster_name: string;
  cloud_provider: string;
  cloud_region: string;
  engine_version: string;
  available_engine_versions: string[];
  replicas: SeedReplica[];
  weights: Weights;
}

export function seedClusters(): SeedCluster[] {
  return [
    {
      cluster_id: 'aws-eu-central-1-01',
      cluster_name: 'dedicated-aws-eu-central-1-01',
      cloud_provider: 'aws',
      cloud_region: 'eu-central-1',
      engine_version: '24.8.4',
      available_engine_versions: ['24.8.4', '25.3.2'],
      replicas: [
        { name: 'replica-1', size: '16-64' },
        { name: 'replica-2', size: '16-64' },
      ],
      weights: {
        writer: { 'replica-1': 100, 'replica-2': 0 },
        reader: { 'replica-1': 50, 'replica-2': 50 },
        copyjob: { 'replica-1': 1, 'replica-2': 1 },
      },
    },
    {
      cluster_id: 'gcp-europe-west3-01',
      cluster_name: 'dedicated-gcp-europe-west3-01',
      cloud_provider: 'gcp',
      cloud_region: 'europe-west3',
      engine_version: '25.3.2',
      available_engine_versions: ['25.3.2'],
      replicas: [
        { name: 'replica-1', size: '32-128' },
        { name: 'replica-2', size: '32-128' },
        { name: 'replica-3', size: '16-64' },
      ],
      weights: {
        writer: { 'replica-1': 100, 'replica-2': 0, 'replica-3': 0 },
        reader: { 'replica-1': 40, 'replica-2': 40, 'replica-3': 20 },
        copyjob: { 'replica-1': 1, 'replica-2': 1, 'replica-3': 1 },
      },
    },
  ];
}
