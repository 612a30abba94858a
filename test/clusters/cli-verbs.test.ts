// `spoolship clusters` in-process against the real emulator on port 0: each
// verb's request body as the emulator received it, field by field.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clusterCatalog } from '../../src/emulator/clusters/catalog.js';
import { AWS, GCP, ORG, runClusters, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
beforeEach(async () => {
  t = await startTestEmulator();
});
afterEach(async () => {
  await t.emu.close();
});

const SEED_AWS = {
  writer: { 'replica-1': 100, 'replica-2': 0 },
  reader: { 'replica-1': 50, 'replica-2': 50 },
  copyjob: { 'replica-1': 1, 'replica-2': 1 },
};
const SEED_GCP = {
  writer: { 'replica-1': 100, 'replica-2': 0, 'replica-3': 0 },
  reader: { 'replica-1': 40, 'replica-2': 40, 'replica-3': 20 },
  copyjob: { 'replica-1': 1, 'replica-2': 1, 'replica-3': 1 },
};

describe('clusters list / config', () => {
  it('list: one row per replica, sizes as cpu-memory, weights per role side by side, flags', async () => {
    const r = await runClusters(['list', ...t.target]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^CLUSTER\s+PROVIDER\/REGION\s+ENGINE\s+REPLICA\s+SIZE\s+STATE\s+WRITER\s+READER\s+COPYJOB\s+FLAGS$/);
    expect(lines[1]).toMatch(/^aws-eu-central-1-01\s+aws\/eu-central-1\s+24\.8\.4\s+replica-1\s+16-64\s+running\s+100\s+50\s+1\s+can_rebalance can_scale$/);
    expect(lines[2]).toMatch(/^\s+replica-2\s+16-64\s+running\s+0\s+50\s+1$/);
    expect(lines[5]).toMatch(/^\s+replica-3\s+16-64\s+running\s+0\s+20\s+1$/);
    // Aligned: every row has its STATE column at the same offset as the header.
    const col = lines[0]!.indexOf('STATE');
    for (const l of lines.slice(1)) expect(l.slice(col, col + 7)).toBe('running');
    expect(r.stdout).not.toContain('\x1b['); // not a TTY: no colour
  });

  it('list --json is the server response object', async () => {
    const r = await runClusters(['list', '--json', ...t.target]);
    expect(JSON.parse(r.stdout)).toEqual({ clusters: [t.emu.clusters.getCluster(AWS), t.emu.clusters.getCluster(GCP)] });
  });

  it('list and config take every flag of the synopsis: --yes, --dry-run and --force change nothing; list --cluster shows that cluster alone', async () => {
    const all = await runClusters(['list', '--json', ...t.target]);
    for (const verb of ['list', 'config']) {
      const r = await runClusters([verb, '--json', '--yes', '--dry-run', '--force', ...t.target]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(verb === 'list' ? JSON.parse(all.stdout) : clusterCatalog());
    }
    const cfg = await runClusters(['config', '--json', '--cluster', AWS, '--wait', ...t.target]);
    expect(JSON.parse(cfg.stdout)).toEqual(clusterCatalog());
    const one = await runClusters(['list', '--json', '--cluster', GCP, '--yes', ...t.target]);
    expect(JSON.parse(one.stdout)).toEqual({ clusters: [t.emu.clusters.getCluster(GCP)] });
    const table = await runClusters(['list', '--cluster', AWS, ...t.target]);
    expect(table.stdout).toMatch(/^aws-eu-central-1-01\s/m);
    expect(table.stdout).not.toContain(GCP);
    const unknown = await runClusters(['list', '--cluster', 'nope', ...t.target]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no cluster 'nope' in organization acme; clusters: aws-eu-central-1-01, gcp-europe-west3-01/);
    expect(t.writes()).toEqual([]);
  });

  it('config: table and --json', async () => {
    const table = await runClusters(['config', ...t.target]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^gcp\s+80-320\s+80\s+320$/m);
    expect(table.stdout).toMatch(/^aws\s+us-east-1, us-west-2, eu-central-1, eu-west-1, ap-east-1$/m);
    expect(table.stdout).toContain('roles: writer, reader, copyjob');
    const j = await runClusters(['config', '--json', ...t.target]);
    expect(JSON.parse(j.stdout)).toEqual(clusterCatalog());
  });
});

describe('modifying verbs: request bodies', () => {
  it('rebalance --set: PUT with old_weights = the listing and only the listed replicas changed', async () => {
    const r = await runClusters(['rebalance', '--cluster', AWS, '--set', 'writer=replica-1:60,replica-2:40', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/replica-1\s+16-64\s+100 -> 60\s+50\s+1/);
    expect(r.stdout).toContain('accepted: weight_update_requested');
    const [w] = t.writes();
    expect(w!.method).toBe('PUT');
    expect(w!.path).toBe(`/v0/organizations/${ORG}/clusters/${AWS}/weights`);
    const body = w!.body as { old_weights: unknown; new_weights: Record<string, unknown> };
    expect(Object.keys(body).sort()).toEqual(['new_weights', 'old_weights']);
    expect(body.old_weights).toEqual(SEED_AWS);
    expect(body.new_weights.writer).toEqual({ 'replica-1': 60, 'replica-2': 40 });
    expect(body.new_weights.reader).toEqual(SEED_AWS.reader);
    expect(body.new_weights.copyjob).toEqual(SEED_AWS.copyjob);
    expect(w!.status).toBe(200);
  });

  it('rebalance: several roles in one --set, and --even with the remainder in name order', async () => {
    const r = await runClusters(['rebalance', '--cluster', GCP, '--set', 'writer=replica-1:50,replica-2:50', '--even', 'reader', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    const body = t.writes()[0]!.body as { old_weights: unknown; new_weights: Record<string, unknown> };
    expect(body.old_weights).toEqual(SEED_GCP);
    expect(body.new_weights).toEqual({
      writer: { 'replica-1': 50, 'replica-2': 50, 'replica-3': 0 },
      reader: { 'replica-1': 34, 'replica-2': 33, 'replica-3': 33 },
      copyjob: SEED_GCP.copyjob,
    });
  });

  it('add-replica: POST with replica_size, existing_replicas.{old,new}_weights and the default new_replica', async () => {
    const r = await runClusters(['add-replica', '--cluster', GCP, '--size', '8-32', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/new replica replica-4 is adding/);
    const [w] = t.writes();
    expect([w!.method, w!.path]).toEqual(['POST', `/v0/organizations/${ORG}/clusters/${GCP}/replicas`]);
    const body = w!.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['existing_replicas', 'new_replica', 'replica_size']);
    expect(body.replica_size).toBe('8-32');
    expect(body.existing_replicas).toEqual({
      old_weights: SEED_GCP,
      new_weights: { writer: SEED_GCP.writer, reader: { 'replica-1': 30, 'replica-2': 30, 'replica-3': 15 }, copyjob: SEED_GCP.copyjob },
    });
    expect(body.new_replica).toEqual({ writer: 0, reader: 25, copyjob: 1 }); // Math.round(100 / (3 + 1))
  });

  it('add-replica --weight: the given share, existing replicas scaled by largest remainder', async () => {
    const r = await runClusters(['add-replica', '--cluster', AWS, '--size', '16-64', '--weight', 'reader=50', '--weight', 'writer=10', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    const body = t.writes()[0]!.body as { existing_replicas: { new_weights: unknown }; new_replica: unknown };
    expect(body.new_replica).toEqual({ writer: 10, reader: 50, copyjob: 1 });
    expect(body.existing_replicas.new_weights).toEqual({
      writer: { 'replica-1': 90, 'replica-2': 0 },
      reader: { 'replica-1': 25, 'replica-2': 25 },
      copyjob: SEED_AWS.copyjob,
    });
  });

  it('remove-replica: DELETE .../replicas/NAME, its share in proportion, copyjob entry gone', async () => {
    const r = await runClusters(['remove-replica', '--cluster', GCP, '--replica', 'replica-2', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    const [w] = t.writes();
    expect([w!.method, w!.path]).toEqual(['DELETE', `/v0/organizations/${ORG}/clusters/${GCP}/replicas/replica-2`]);
    expect(w!.body).toEqual({
      old_weights: SEED_GCP,
      new_weights: {
        writer: { 'replica-1': 100, 'replica-3': 0 },
        reader: { 'replica-1': 67, 'replica-3': 33 }, // 40 + 40*40/60 = 66.67, 20 + 40*20/60 = 33.33
        copyjob: { 'replica-1': 1, 'replica-3': 1 },
      },
    });
    expect(Object.keys(t.emu.clusters.getCluster(GCP)!.replicas)).toEqual(['replica-1', 'replica-3']);
  });

  it('a rebalance that changes nothing is not sent', async () => {
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'reader', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('nothing to change: the cluster already has these weights; nothing was sent');
    expect(t.writes()).toEqual([]);
  });

  it('--dry-run prints the plan and sends nothing', async () => {
    const r = await runClusters(['remove-replica', '--cluster', GCP, '--replica', 'replica-1', '--dry-run', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/replica-1\s+32-128\s+100 -> -\s+40 -> -\s+1 -> -\s+removed/);
    expect(r.stdout).toContain('dry run: nothing was sent');
    expect(t.writes()).toEqual([]);
  });

  it('--json: {"plan", "response"} on stdout, the plan table on stderr', async () => {
    const r = await runClusters(['add-replica', '--cluster', AWS, '--size', '8-32', '--yes', '--json', ...t.target]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { plan: Record<string, unknown>; response: Record<string, unknown> };
    expect(out.response).toEqual({ cluster_id: AWS, new_replica: { name: 'replica-3', cpu: 8, memory_gb: 32, state: 'adding' }, operation: 'replica_add_requested' });
    expect(out.plan).toMatchObject({ verb: 'add-replica', org: ORG, cluster_id: AWS, before: SEED_AWS, new_replica: { size: '8-32' }, replanned: false });
    expect((out.plan.request as { body: unknown }).body).toEqual(t.writes()[0]!.body);
    expect(r.stderr).toContain('REPLICA');
    t.clock.t += 5000; // the add keeps the cluster busy until then
    const dry = await runClusters(['rebalance', '--cluster', AWS, '--even', 'writer', '--dry-run', '--json', ...t.target]);
    expect(JSON.parse(dry.stdout)).toMatchObject({ plan: { verb: 'rebalance' }, response: null });
  });
});
