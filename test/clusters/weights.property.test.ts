// For any replicas and weights, the planner's output obeys SPEC 5's rules:
// integers, writer and reader summing to 100, copyjob 1 per replica, and a
// removed replica nowhere. Plans go through buildPlan, the code the CLI runs.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildPlan, type Intent } from '../../src/clusters/plan.js';
import type { Cluster, Weights } from '../../src/clusters/types.js';
import { clusterCatalog } from '../../src/emulator/clusters/catalog.js';

const config = clusterCatalog();

/**
 * A cluster of 2..8 replicas; writer/reader weights arbitrary integers (any
 * sum, zeros included), a replica sometimes absent from a role (-1 below),
 * copyjob 1 each.
 */
const clusterArb = fc
  .uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/), { minLength: 2, maxLength: 8 })
  .chain((names) =>
    fc.record({
      names: fc.constant(names),
      writer: fc.array(fc.integer({ min: -1, max: 1000 }), { minLength: names.length, maxLength: names.length }),
      reader: fc.array(fc.integer({ min: -1, max: 1000 }), { minLength: names.length, maxLength: names.length }),
    }),
  )
  .map(({ names, writer, reader }): Cluster => {
    const weights: Weights = {
      writer: Object.fromEntries(names.flatMap((n, i) => (writer[i]! < 0 ? [] : [[n, writer[i]!]]))),
      reader: Object.fromEntries(names.flatMap((n, i) => (reader[i]! < 0 ? [] : [[n, reader[i]!]]))),
      copyjob: Object.fromEntries(names.map((n) => [n, 1])),
    };
    return {
      cluster_id: 'c1',
      cluster_name: 'c1',
      cloud_provider: 'aws',
      cloud_region: 'eu-central-1',
      operation_in_progress: false,
      can_rebalance: true,
      can_scale: true,
      cluster_weights: weights,
      replicas: Object.fromEntries(names.map((n) => [n, { name: n, cpu: 16, memory_gb: 64, state: 'running' }])),
      error: null,
      ongoing_maintenance: false,
      engine_version: null,
      available_engine_versions: [],
      rolling_update_config: null,
    };
  });

function expectRules(after: Weights, replicas: string[]): void {
  for (const role of ['writer', 'reader']) {
    const values = Object.values(after[role]!);
    expect(values.every((v) => Number.isInteger(v) && v >= 0)).toBe(true);
    expect(values.reduce((s, v) => s + v, 0)).toBe(100);
  }
  expect(after.copyjob).toEqual(Object.fromEntries(replicas.map((r) => [r, 1])));
}

describe('planned weights (property)', () => {
  it('remove-replica: rules hold and the removed replica appears nowhere', () => {
    fc.assert(
      fc.property(clusterArb, fc.nat(), (cluster, pick) => {
        const names = Object.keys(cluster.replicas);
        const removed = names[pick % names.length]!;
        const { plan, problems } = buildPlan({ verb: 'remove-replica', replica: removed }, cluster, config, { org: 'o', force: false });
        expect(problems).toEqual([]);
        expectRules(plan.after, names.filter((n) => n !== removed));
        for (const m of Object.values(plan.after)) expect(Object.keys(m)).not.toContain(removed);
        expect(JSON.stringify((plan.request.body as { new_weights: unknown }).new_weights)).not.toContain(`"${removed}"`);
      }),
    );
  });

  it('add-replica: existing + new replica keep the rules, for default and given weights', () => {
    fc.assert(
      fc.property(clusterArb, fc.option(fc.nat({ max: 100 })), fc.option(fc.nat({ max: 100 })), (cluster, reader, writer) => {
        const weights: Record<string, number> = {};
        if (reader !== null) weights.reader = reader;
        if (writer !== null) weights.writer = writer;
        const intent: Intent = { verb: 'add-replica', size: '16-64', weights };
        const { plan, problems } = buildPlan(intent, cluster, config, { org: 'o', force: false });
        expect(problems).toEqual([]);
        const all: Weights = JSON.parse(JSON.stringify(plan.after));
        for (const [role, w] of Object.entries(plan.new_replica!.weights)) all[role]![' new'] = w;
        expectRules(all, [...Object.keys(cluster.replicas), ' new']);
      }),
    );
  });

  it('rebalance --even: rules hold for writer and reader', () => {
    fc.assert(
      fc.property(clusterArb, (cluster) => {
        const { plan, problems } = buildPlan({ verb: 'rebalance', sets: {}, even: ['writer', 'reader'] }, cluster, config, { org: 'o', force: false });
        expect(problems).toEqual([]);
        expectRules(plan.after, Object.keys(cluster.replicas));
      }),
    );
  });
});
