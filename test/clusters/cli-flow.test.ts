// The read-modify-write around the request: 409 conflicts re-planned once on
// fresh weights, --wait across adding -> running, confirmation on a terminal,
// and where org, token and base URL come from.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Weights } from '../../src/clusters/types.js';
import { ADMIN, AWS, DELAY_MS, GCP, ORG, emptyDir, runClusters, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
beforeEach(async () => {
  t = await startTestEmulator();
});
afterEach(async () => {
  await t.emu.close();
});

type Body = { old_weights: Weights; new_weights: Weights };

/** Plays another operator: runs `change` when the CLI's first write arrives, after its read. */
function otherOperatorOnFirstWrite(change: () => void): void {
  let done = false;
  t.emu.clusters.onRequest((req) => {
    if (req.method !== 'GET' && !done) {
      done = true;
      change();
    }
  });
}

describe('409 conflict', () => {
  it('rebalance: re-reads, re-applies the --set to the fresh weights, keeps the other role change', async () => {
    const seed = t.emu.clusters.getCluster(AWS)!.cluster_weights;
    otherOperatorOnFirstWrite(() => t.emu.clusters.setWeights(AWS, { ...seed, reader: { 'replica-1': 70, 'replica-2': 30 } }));
    const r = await runClusters(['rebalance', '--cluster', AWS, '--set', 'writer=replica-1:60,replica-2:40', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('the cluster changed since it was read (another operator?); re-planned on its current weights:');
    const [first, second] = t.writes();
    expect(first!.status).toBe(409);
    expect((first!.response as { current_weights: Weights }).current_weights.reader).toEqual({ 'replica-1': 70, 'replica-2': 30 });
    expect(second!.status).toBe(200);
    const body = second!.body as Body;
    expect(body.old_weights.reader).toEqual({ 'replica-1': 70, 'replica-2': 30 });
    expect(body.new_weights).toEqual({ writer: { 'replica-1': 60, 'replica-2': 40 }, reader: { 'replica-1': 70, 'replica-2': 30 }, copyjob: seed.copyjob });
    expect(t.writes()).toHaveLength(2);
  });

  it('remove-replica: the share is recomputed from the other operator\'s weights', async () => {
    const seed = t.emu.clusters.getCluster(GCP)!.cluster_weights;
    otherOperatorOnFirstWrite(() => t.emu.clusters.setWeights(GCP, { ...seed, reader: { 'replica-1': 60, 'replica-2': 20, 'replica-3': 20 } }));
    const r = await runClusters(['remove-replica', '--cluster', GCP, '--replica', 'replica-3', '--yes', '--json', ...t.target]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { plan: { replanned: boolean }; response: { operation: string } };
    expect(out.plan.replanned).toBe(true);
    expect(out.response.operation).toBe('replica_delete_requested');
    expect((t.writes()[1]!.body as Body).new_weights.reader).toEqual({ 'replica-1': 75, 'replica-2': 25 });
  });

  it('when the other operator already made the same change, nothing is sent again', async () => {
    const seed = t.emu.clusters.getCluster(AWS)!.cluster_weights;
    otherOperatorOnFirstWrite(() => t.emu.clusters.setWeights(AWS, { ...seed, writer: { 'replica-1': 60, 'replica-2': 40 } }));
    const r = await runClusters(['rebalance', '--cluster', AWS, '--set', 'writer=replica-1:60,replica-2:40', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('nothing to change: the cluster already has these weights; nothing was sent');
    expect(t.writes().map((w) => w.status)).toEqual([409]);
    // --json says it was re-planned, as stderr does.
    otherOperatorOnFirstWrite(() => t.emu.clusters.setWeights(AWS, { ...seed, writer: { 'replica-1': 30, 'replica-2': 70 } }));
    const j = await runClusters(['rebalance', '--cluster', AWS, '--set', 'writer=replica-1:30,replica-2:70', '--yes', '--json', ...t.target]);
    expect(j.code).toBe(0);
    expect((JSON.parse(j.stdout) as { plan: { replanned: boolean }; response: unknown }).plan.replanned).toBe(true);
    expect(j.stderr).toContain('re-planned');
  });

  it('a cluster that became busy between read and write: 409, re-read, refused with exit 1', async () => {
    otherOperatorOnFirstWrite(() => t.emu.clusters.setFlags(GCP, { operation_in_progress: true }));
    const r = await runClusters(['remove-replica', '--cluster', GCP, '--replica', 'replica-1', '--yes', ...t.target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/has an operation in progress/);
    expect(t.writes().map((w) => w.status)).toEqual([409]);
  });

  it('a second conflict: exit 1 showing both versions', async () => {
    let n = 0;
    t.emu.clusters.onRequest((req) => {
      if (req.method === 'PUT') t.emu.clusters.setWeights(AWS, { ...t.emu.clusters.getCluster(AWS)!.cluster_weights, reader: { 'replica-1': 10 + n, 'replica-2': 90 - n++ } });
    });
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'writer', '--yes', ...t.target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/was changed by someone else while this change was being applied; nothing was applied/);
    expect(r.stderr).toMatch(/planned from: writer: replica-1=100 replica-2=0; reader: replica-1=10 replica-2=90; copyjob: replica-1=1 replica-2=1/);
    expect(r.stderr).toMatch(/cluster now: {2}writer: replica-1=100 replica-2=0; reader: replica-1=11 replica-2=89; copyjob/);
    expect(t.writes().map((w) => w.status)).toEqual([409, 409]);
  });

  it('a change that no longer fits after the conflict: exit 1, not sent again', async () => {
    const seed = t.emu.clusters.getCluster(GCP)!.cluster_weights;
    otherOperatorOnFirstWrite(() => t.emu.clusters.setWeights(GCP, { ...seed, writer: { 'replica-1': 80, 'replica-2': 0, 'replica-3': 20 } }));
    const r = await runClusters(['rebalance', '--cluster', GCP, '--set', 'writer=replica-1:50,replica-2:50', '--yes', ...t.target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the change no longer fits the cluster:\n\s+writer: weights sum to 120/);
    expect(t.writes().map((w) => w.status)).toEqual([409]);
  });
});

describe('--wait', () => {
  it('polls across adding -> running, then exits 0', async () => {
    let polls = 0;
    t.emu.clusters.onRequest((req) => {
      const afterWrite = t.writes().length > 0;
      // The second poll after the POST finds the delay passed.
      if (req.method === 'GET' && req.path.endsWith('/clusters') && afterWrite && ++polls === 2) t.clock.t += DELAY_MS;
    });
    const r = await runClusters(['add-replica', '--cluster', AWS, '--size', '8-32', '--yes', '--wait', '--poll-interval-ms', '1', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`waiting for cluster ${AWS}: operation in progress, replica-3 adding\n`);
    expect(r.stderr).toMatch(new RegExp(`cluster ${AWS}: done, every replica running`));
    const polled = t.emu.clusters.requests().filter((q) => q.method === 'GET' && q.at >= t.writes()[0]!.at).slice(-2);
    const stateIn = (q: (typeof polled)[number]) =>
      (q.response as { clusters: Array<{ cluster_id: string; replicas: Record<string, { state: string }> }> }).clusters.find((c) => c.cluster_id === AWS)!.replicas['replica-3']!.state;
    expect(polled.map(stateIn)).toEqual(['adding', 'running']);
  });

  it('a spinner on a terminal', async () => {
    let polls = 0;
    t.emu.clusters.onRequest((req) => {
      if (req.method === 'GET' && t.writes().length > 0 && ++polls === 3) t.clock.t += DELAY_MS;
    });
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'writer', '--yes', '--wait', '--poll-interval-ms', '1', ...t.target], { tty: true });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/\r\x1b\[K⠋ waiting for cluster aws-eu-central-1-01: operation in progress/);
    expect(r.stderr).toMatch(/\r\x1b\[Kcluster aws-eu-central-1-01: done/);
  });

  it('list --wait lists once every cluster has settled (--cluster: that one)', async () => {
    t.emu.clusters.setFlags(GCP, { operation_in_progress: true });
    let polls = 0;
    t.emu.clusters.onRequest((req) => {
      if (req.method === 'GET' && req.path.endsWith('/clusters') && ++polls === 2) t.emu.clusters.setFlags(GCP, { operation_in_progress: false });
    });
    const r = await runClusters(['list', '--json', '--wait', '--poll-interval-ms', '1', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`waiting for cluster ${GCP}: operation in progress\n`);
    expect(r.stderr).toMatch(/every cluster: done, every replica running/);
    // The listing printed is the one taken after the wait.
    expect(JSON.parse(r.stdout)).toEqual({ clusters: [t.emu.clusters.getCluster(AWS), t.emu.clusters.getCluster(GCP)] });
    expect((JSON.parse(r.stdout) as { clusters: Array<{ operation_in_progress: boolean }> }).clusters[1]!.operation_in_progress).toBe(false);
    expect(polls).toBe(3);

    t.emu.clusters.setFlags(GCP, { operation_in_progress: true });
    const other = await runClusters(['list', '--cluster', AWS, '--wait', '--wait-timeout-ms', '30', '--poll-interval-ms', '5', ...t.target]);
    expect(other.code).toBe(0);
    const busy = await runClusters(['list', '--cluster', GCP, '--wait', '--wait-timeout-ms', '30', '--poll-interval-ms', '5', ...t.target]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/cluster gcp-europe-west3-01 did not settle within 30 ms \(operation in progress\); check 'spoolship clusters list', or wait longer/);
    expect(busy.stdout).toBe('');
  });

  it('times out with exit 1 when the cluster does not settle', async () => {
    const r = await runClusters(['add-replica', '--cluster', AWS, '--size', '8-32', '--yes', '--wait', '--wait-timeout-ms', '30', '--poll-interval-ms', '5', ...t.target]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('accepted: replica_add_requested');
    expect(r.stderr).toMatch(/did not settle within 30 ms \(operation in progress, replica-3 adding\); the change was accepted and goes on/);
  });
});

describe('confirmation', () => {
  it('on a terminal: asks, y applies; states and changes are coloured', async () => {
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'writer', ...t.target], { tty: true, input: 'y\n' });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`apply this change to cluster ${AWS}? [y/N] `);
    expect(r.stdout).toContain('\x1b[33m');
    expect(t.writes()).toHaveLength(1);
    const list = await runClusters(['list', ...t.target], { tty: true });
    expect(list.stdout).toContain('\x1b[32mrunning\x1b[39m');
    const noColor = await runClusters(['list', ...t.target], { tty: true, env: { NO_COLOR: '1' } });
    expect(noColor.stdout).not.toContain('\x1b[');
  });

  it('on a terminal: anything but y, or end of input, sends nothing (exit 1)', async () => {
    for (const input of ['n\n', '', 'sure\n']) {
      const r = await runClusters(['remove-replica', '--cluster', GCP, '--replica', 'replica-3', ...t.target], { tty: true, input });
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('not applied: nothing was sent');
    }
    expect(t.writes()).toEqual([]);
  });

  it('without a terminal and without --yes: exit 2 before any request', async () => {
    const r = await runClusters(['rebalance', '--cluster', AWS, '--even', 'reader', ...t.target]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/stdin is not a terminal, so pass --yes to apply \(or --dry-run/);
    expect(t.emu.clusters.requests()).toEqual([]);
  });
});

describe('org, token and base URL', () => {
  function configFile(dir: string, yaml: string): string {
    const file = path.join(dir, 'spoolship.yaml');
    writeFileSync(file, yaml);
    return file;
  }

  it('-c FILE: clusters.org, clusters.token and api.base_url', async () => {
    const file = configFile(emptyDir(), `api:\n  base_url: ${t.emu.url}\nclusters:\n  org: ${ORG}\n  token: ${ADMIN}\n`);
    const r = await runClusters(['list', '-c', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(AWS);
  });

  it('the default ./config/spoolship.yaml; SPOOLSHIP_ADMIN_TOKEN beats clusters.token; --token beats both', async () => {
    const dir = emptyDir();
    mkdirSync(path.join(dir, 'config'));
    configFile(path.join(dir, 'config'), `api:\n  base_url: ${t.emu.url}\nclusters:\n  org: ${ORG}\n  token: stale\n`);
    expect((await runClusters(['list'], { cwd: dir })).code).toBe(1); // stale token: 403
    expect((await runClusters(['list'], { cwd: dir, env: { SPOOLSHIP_ADMIN_TOKEN: ADMIN } })).code).toBe(0);
    expect((await runClusters(['list', '--token', ADMIN], { cwd: dir, env: { SPOOLSHIP_ADMIN_TOKEN: 'stale' } })).code).toBe(0);
  });

  it('with every flag given, the config file found and SPOOLSHIP_* still set the proxy (api.proxy: every command that talks to the platform)', async () => {
    // A proxy nothing listens on: a request through it fails naming it; one that went direct would succeed.
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const proxy = `http://127.0.0.1:${(probe.address() as { port: number }).port}`;
    await new Promise((r) => probe.close(r));
    const dir = emptyDir();
    mkdirSync(path.join(dir, 'config'));
    configFile(path.join(dir, 'config'), `api:\n  proxy: ${proxy}\n`);
    const fromFile = await runClusters(['list', ...t.target], { cwd: dir });
    expect([fromFile.code, fromFile.stderr]).toEqual([1, expect.stringContaining(proxy.slice('http://'.length))]);
    const fromEnv = await runClusters(['list', ...t.target], { cwd: emptyDir(), env: { SPOOLSHIP_API__PROXY: proxy } });
    expect([fromEnv.code, fromEnv.stderr]).toEqual([1, expect.stringContaining(proxy.slice('http://'.length))]);
    // A misspelt SPOOLSHIP_* variable is a warning here too.
    const misspelt = await runClusters(['list', ...t.target], { cwd: emptyDir(), env: { SPOOLSHIP_CLUSTER__ORG: ORG } });
    expect(misspelt.code).toBe(0);
    expect(misspelt.stderr).toContain('SPOOLSHIP_CLUSTER__ORG');
    expect(t.emu.clusters.requests()).toHaveLength(1);
  });

  it('flags alone work with no config file; missing pieces are usage errors naming the flag and key', async () => {
    expect((await runClusters(['list', ...t.target])).code).toBe(0);
    const noOrg = await runClusters(['list', '--token', ADMIN, '--base-url', t.emu.url]);
    expect([noOrg.code, noOrg.stderr]).toEqual([2, expect.stringMatching(/no organization: give --org ORG or set clusters.org/)]);
    const noToken = await runClusters(['list', '--org', ORG, '--base-url', t.emu.url]);
    expect([noToken.code, noToken.stderr]).toEqual([2, expect.stringMatching(/no admin token: give --token T, set SPOOLSHIP_ADMIN_TOKEN/)]);
    // A token no HTTP header can carry (a trailing \r from a file with Windows line ends): a usage error naming it, nothing sent.
    const crFlag = await runClusters(['list', '--org', ORG, '--base-url', t.emu.url, '--token', `${ADMIN}\r`]);
    expect([crFlag.code, crFlag.stderr]).toEqual([2, expect.stringContaining('the admin token contains \\r (a carriage return')]);
    const crEnv = await runClusters(['list', '--org', ORG, '--base-url', t.emu.url], { env: { SPOOLSHIP_ADMIN_TOKEN: `${ADMIN}\r` } });
    expect([crEnv.code, crEnv.stderr]).toEqual([2, expect.stringContaining('contains \\r (a carriage return')]);
    // Names that are path steps, and a base URL whose query or fragment would swallow the path: usage errors, nothing sent.
    for (const org of ['..', '.', '%2E%2e']) {
      const stepOrg = await runClusters(['list', '--org', org, '--token', ADMIN, '--base-url', t.emu.url]);
      expect([stepOrg.code, stepOrg.stderr]).toEqual([2, expect.stringContaining(`'${org}' is not a name`)]);
    }
    for (const tail of ['?x=1', '#frag']) {
      const odd = await runClusters(['list', '--org', ORG, '--token', ADMIN, '--base-url', `${t.emu.url}/${tail}`]);
      expect([odd.code, odd.stderr]).toEqual([2, expect.stringContaining('give the API host without a query or fragment')]);
    }
    const noUrl = await runClusters(['list', '--org', ORG, '--token', ADMIN]);
    expect([noUrl.code, noUrl.stderr]).toEqual([2, expect.stringMatching(/no API host: give --base-url URL or set api.base_url/)]);
    const embedded = configFile(emptyDir(), `api:\n  base_url: embedded\n`);
    const emb = await runClusters(['list', '--org', ORG, '--token', ADMIN, '-c', embedded]);
    expect([emb.code, emb.stderr]).toEqual([2, expect.stringMatching(/api.base_url is 'embedded'/)]);
    expect(t.emu.clusters.requests().filter((q) => q.status === 200)).toHaveLength(1);
  });
});
