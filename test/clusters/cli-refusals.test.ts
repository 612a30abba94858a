// Refusals: local validation (exit 2) and cluster preconditions (exit 1).
// Each sends no modifying request; pure flag errors send no request at all.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AWS, GCP, runClusters, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
beforeEach(async () => {
  t = await startTestEmulator();
});
afterEach(async () => {
  await t.emu.close();
});

describe('validation refusals: exit 2, nothing sent', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['writer not summing to 100', ['rebalance', '--cluster', GCP, '--set', 'writer=replica-1:60'], /writer: weights sum to 60, must be 100/],
    ['reader over 100', ['rebalance', '--cluster', AWS, '--set', 'reader=replica-1:60,replica-2:60'], /reader: weights sum to 120/],
    ['unknown replica in --set', ['rebalance', '--cluster', AWS, '--set', 'writer=replica-1:50,replica-9:50'], /no replica 'replica-9'/],
    ['unknown role in --set', ['rebalance', '--cluster', AWS, '--set', 'boss=replica-1:1'], /role 'boss' is not manageable; available roles: writer, reader, copyjob/],
    ['copyjob not 1 per replica', ['rebalance', '--cluster', AWS, '--set', 'copyjob=replica-2:0'], /copyjob: must be 1 for every replica, not for replica-2/],
    ['--even on copyjob', ['rebalance', '--cluster', AWS, '--even', 'copyjob'], /--even copyjob: only writer and reader/],
    ['size not offered for the provider', ['add-replica', '--cluster', AWS, '--size', '80-320'], /size '80-320' is not available for aws; available sizes: 4-32, 8-32, 16-64, 32-128, 48-192, 64-256, 96-384, 128-512/],
    ['new replica over 100', ['add-replica', '--cluster', AWS, '--size', '8-32', '--weight', 'reader=150'], /reader: weights sum to 150/],
    ['new replica without copyjob 1', ['add-replica', '--cluster', AWS, '--size', '8-32', '--weight', 'copyjob=0'], /copyjob: must be 1 for every replica, not for \(new\)/],
    ['removing an unknown replica', ['remove-replica', '--cluster', GCP, '--replica', 'replica-8'], /no replica 'replica-8' in cluster gcp-europe-west3-01; replicas: replica-1, replica-2, replica-3/],
    ['unknown cluster', ['rebalance', '--cluster', 'nope', '--even', 'reader'], /no cluster 'nope' in organization acme; clusters: aws-eu-central-1-01, gcp-europe-west3-01/],
  ];
  for (const [name, args, message] of cases) {
    it(name, async () => {
      const r = await runClusters([...args, '--yes', ...t.target]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(t.writes()).toEqual([]);
    });
  }

  const flagCases: Array<[string, string[], RegExp]> = [
    ['bad --set syntax', ['rebalance', '--cluster', AWS, '--set', 'writer=replica-1'], /expected REPLICA:WEIGHT/],
    ['non-integer weight', ['rebalance', '--cluster', AWS, '--set', 'writer=replica-1:5.5'], /must be an integer >= 0/],
    ['missing --cluster', ['rebalance', '--even', 'reader'], /needs --cluster/],
    ['missing --size', ['add-replica', '--cluster', AWS], /needs --size/],
    ['rebalance without a change', ['rebalance', '--cluster', AWS], /needs --set ROLE=REPLICA:W,... or --even ROLE/],
    ['an option of another verb', ['remove-replica', '--cluster', AWS, '--replica', 'replica-1', '--size', '8-32'], /--size is not an option of 'clusters remove-replica'/],
    ['unknown verb', ['scale'], /unknown verb 'scale'; use one of: list, config, rebalance, add-replica, remove-replica/],
    ['bad --timeout-ms', ['rebalance', '--cluster', AWS, '--even', 'reader', '--timeout-ms', 'soon'], /--timeout-ms 'soon': must be a positive integer/],
  ];
  for (const [name, args, message] of flagCases) {
    it(`${name}: no request at all`, async () => {
      const r = await runClusters([...args, '--yes', ...t.target]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(t.emu.clusters.requests()).toEqual([]);
    });
  }

  it('--force skips the sum rules (and the emulator takes weights not summing to 100)', async () => {
    const r = await runClusters(['rebalance', '--cluster', GCP, '--set', 'writer=replica-1:60', '--force', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect((t.writes()[0]!.body as { new_weights: { writer: unknown } }).new_weights.writer).toEqual({ 'replica-1': 60, 'replica-2': 0, 'replica-3': 0 });
  });

  it('--force does not allow the removed replica in the new weights: the plan never keeps it', async () => {
    const r = await runClusters(['remove-replica', '--cluster', AWS, '--replica', 'replica-1', '--force', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    const body = t.writes()[0]!.body as { new_weights: Record<string, Record<string, number>> };
    for (const m of Object.values(body.new_weights)) expect(Object.keys(m)).toEqual(['replica-2']);
  });
});

describe('precondition refusals: exit 1 with the reason, nothing sent', () => {
  it('operation_in_progress refuses every modifying verb', async () => {
    t.emu.clusters.setFlags(AWS, { operation_in_progress: true });
    for (const args of [
      ['rebalance', '--cluster', AWS, '--even', 'reader'],
      ['add-replica', '--cluster', AWS, '--size', '8-32'],
      ['remove-replica', '--cluster', AWS, '--replica', 'replica-2'],
    ]) {
      const r = await runClusters([...args, '--yes', ...t.target]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cluster aws-eu-central-1-01 has an operation in progress \(operation_in_progress is true\)/);
    }
    expect(t.writes()).toEqual([]);
  });

  it('--dry-run on a busy cluster shows the plan, then refuses with exit 1 as the change would', async () => {
    t.emu.clusters.setFlags(AWS, { operation_in_progress: true });
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'writer', '--dry-run', ...t.target]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^replica-1\s+16-64\s+100 -> 50\s/m);
    expect(r.stdout).toContain(`PUT /v0/organizations/acme/clusters/${AWS}/weights`);
    expect(r.stderr).toMatch(/--dry-run: the plan above is what would be sent, but cluster aws-eu-central-1-01 has an operation in progress \(operation_in_progress is true\)/);
    expect(t.writes()).toEqual([]);
  });

  it('a change just made keeps the cluster busy until the delay has passed', async () => {
    expect((await runClusters(['rebalance', '--cluster', AWS, '--even', 'writer', '--yes', ...t.target])).code).toBe(0);
    const again = await runClusters(['rebalance', '--cluster', AWS, '--set', 'reader=replica-1:70,replica-2:30', '--yes', ...t.target]);
    expect(again.code).toBe(1);
    expect(t.writes()).toHaveLength(1);
    t.clock.t += 5000;
    expect((await runClusters(['rebalance', '--cluster', AWS, '--set', 'reader=replica-1:70,replica-2:30', '--yes', ...t.target])).code).toBe(0);
  });

  it('can_rebalance false refuses rebalance only', async () => {
    t.emu.clusters.setFlags(AWS, { can_rebalance: false });
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'reader', '--yes', ...t.target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot be rebalanced now \(can_rebalance is false\)/);
    expect(t.writes()).toEqual([]);
    expect((await runClusters(['add-replica', '--cluster', AWS, '--size', '8-32', '--yes', ...t.target])).code).toBe(0);
  });

  it('can_scale false refuses add-replica and remove-replica', async () => {
    t.emu.clusters.setFlags(GCP, { can_scale: false });
    for (const args of [
      ['add-replica', '--cluster', GCP, '--size', '8-32'],
      ['remove-replica', '--cluster', GCP, '--replica', 'replica-3'],
    ]) {
      const r = await runClusters([...args, '--yes', ...t.target]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cannot be scaled now \(can_scale is false\)/);
    }
    expect(t.writes()).toEqual([]);
  });

  it('a --base-url with credentials is refused (exit 2) without printing the password, as api.base_url is', async () => {
    const url = new URL(t.emu.url);
    url.username = 'user';
    url.password = 'pw-SECRET-123';
    const r = await runClusters(['list', '--org', 'acme', '--token', 'any', '--base-url', url.toString()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--base-url must not carry credentials');
    expect(r.stderr + r.stdout).not.toContain('pw-SECRET-123');
    expect(t.emu.clusters.requests()).toEqual([]);
  });

  it('a rejected token: exit 1 with the status, the body and what to do', async () => {
    const r = await runClusters(['list', '--org', 'acme', '--token', 'wrong', '--base-url', t.emu.url]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/HTTP 403: \{"error":"token not valid.*give an org-admin token with --token, SPOOLSHIP_ADMIN_TOKEN or clusters.token/);
  });
});
