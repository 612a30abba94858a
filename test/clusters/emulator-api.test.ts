// The emulator's cluster API over real HTTP (SPEC 6): auth, routes, the
// documented fields and operation markers, strict 400/404/409 answers, and
// time-derived state driven by the injected clock.
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterConfiguration, ClusterListing, Weights } from '../../src/clusters/types.js';
import { ADMIN, AWS, DELAY_MS, GCP, ORG, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
beforeEach(async () => {
  t = await startTestEmulator();
});
afterEach(async () => {
  await t.emu.close();
});

const auth = { authorization: `Bearer ${ADMIN}` };
const json = { ...auth, 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = json) {
  const res = await request(t.emu.url + path, { method: method as 'GET', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

const base = `/v0/organizations/${ORG}`;
const weightsOf = (id: string): Weights => t.emu.clusters.getCluster(id)!.cluster_weights;

describe('emulator cluster API', () => {
  it('lists the seeded aws and gcp clusters with every documented field', async () => {
    const res = await call('GET', `${base}/clusters`, undefined, auth);
    expect(res.status).toBe(200);
    const { clusters } = res.body as ClusterListing;
    expect(clusters.map((c) => c.cloud_provider)).toEqual(['aws', 'gcp']);
    for (const c of clusters) {
      expect(Object.keys(c).sort()).toEqual(
        [
          'available_engine_versions', 'can_rebalance', 'can_scale', 'cloud_provider', 'cloud_region', 'cluster_id', 'cluster_name',
          'cluster_weights', 'engine_version', 'error', 'ongoing_maintenance', 'operation_in_progress', 'replicas', 'rolling_update_config',
        ].sort(),
      );
      const names = Object.keys(c.replicas);
      expect(Object.values(c.cluster_weights.writer!).reduce((s, v) => s + v, 0)).toBe(100);
      expect(Object.values(c.cluster_weights.reader!).reduce((s, v) => s + v, 0)).toBe(100);
      expect(c.cluster_weights.copyjob).toEqual(Object.fromEntries(names.map((n) => [n, 1])));
      for (const r of Object.values(c.replicas)) expect(r).toEqual({ name: r.name, cpu: expect.any(Number), memory_gb: expect.any(Number), state: 'running' });
    }
    expect(clusters.map((c) => Object.keys(c.replicas).length)).toEqual([2, 3]);
    expect((await call('GET', `${base}/clusters/`, undefined, auth)).body).toEqual(res.body); // trailing slash
  });

  it('configuration: the exact regions, sizes and roles the platform lists; cpu and memory match the size name', async () => {
    const res = await call('GET', `${base}/clusters-configuration/`, undefined, auth);
    const cfg = res.body as ClusterConfiguration;
    expect(cfg.cloud_regions).toEqual({
      aws: ['us-east-1', 'us-west-2', 'eu-central-1', 'eu-west-1', 'ap-east-1'],
      gcp: ['europe-west3', 'us-east4', 'europe-west2', 'northamerica-northeast2'],
    });
    expect(cfg.available_sizes.aws!.map((s) => s.name)).toEqual(['4-32', '8-32', '16-64', '32-128', '48-192', '64-256', '96-384', '128-512']);
    expect(cfg.available_sizes.gcp!.map((s) => s.name)).toEqual(['4-16', '4-32', '8-32', '16-64', '32-128', '48-192', '64-256', '80-320', '96-384', '128-512']);
    for (const s of [...cfg.available_sizes.aws!, ...cfg.available_sizes.gcp!]) expect(`${s.cpu}-${s.memory_gb}`).toBe(s.name);
    expect(cfg.available_roles).toEqual(['writer', 'reader', 'copyjob']);
  });

  it('auth: other tokens 403; ?token= only on the configuration endpoint', async () => {
    expect((await call('GET', `${base}/clusters`, undefined, { authorization: 'Bearer nope' })).status).toBe(403);
    expect((await call('GET', `${base}/clusters`, undefined, {})).status).toBe(403);
    expect((await call('GET', `${base}/clusters-configuration?token=${ADMIN}`, undefined, {})).status).toBe(200);
    expect((await call('GET', `${base}/clusters-configuration?token=nope`, undefined, {})).status).toBe(403);
    expect((await call('GET', `${base}/clusters?token=${ADMIN}`, undefined, {})).status).toBe(403);
    // The scheme's case does not matter (RFC 9110), as on the Events API.
    expect((await call('GET', `${base}/clusters`, undefined, { authorization: `bearer ${ADMIN}` })).status).toBe(200);
    // The foreign token in the query of another endpoint is no token: 403, not the foreign 404.
    expect((await call('GET', `${base}/clusters?token=${t.emu.foreignToken}`, undefined, {})).status).toBe(403);
    expect((await call('GET', `${base}/clusters`, undefined, { authorization: `Bearer ${t.emu.foreignToken}` })).status).toBe(404);
  });

  it('unknown organization or cluster: 404; unknown route: 404; wrong method: 405', async () => {
    expect((await call('GET', `/v0/organizations/other/clusters`, undefined, auth)).status).toBe(404);
    const w = weightsOf(AWS);
    expect((await call('PUT', `${base}/clusters/nope/weights`, { old_weights: w, new_weights: w })).status).toBe(404);
    expect((await call('GET', `${base}/nothing`, undefined, auth)).status).toBe(404);
    expect((await call('GET', `${base}/clusters/${AWS}/weights`, undefined, auth)).status).toBe(405);
  });

  it('PUT weights: marker, updated_weights, a trailing slash, no sum rule; busy for replicaDelayMs', async () => {
    const old = weightsOf(AWS);
    const next = { ...old, reader: { 'replica-1': 10, 'replica-2': 20 } };
    const res = await call('PUT', `${base}/clusters/${AWS}/weights/`, { old_weights: old, new_weights: next });
    expect(res).toEqual({ status: 200, body: { cluster_id: AWS, updated_weights: next, operation: 'weight_update_requested' } });
    const c = t.emu.clusters.getCluster(AWS)!;
    expect([c.operation_in_progress, c.can_rebalance, c.can_scale]).toEqual([true, false, false]);
    t.clock.t += DELAY_MS;
    const later = t.emu.clusters.getCluster(AWS)!;
    expect([later.operation_in_progress, later.can_rebalance, later.can_scale]).toEqual([false, true, true]);
  });

  it('stale old_weights: 409 with current_weights, nothing changed', async () => {
    const current = weightsOf(AWS);
    const stale = { ...current, writer: { 'replica-1': 0, 'replica-2': 100 } };
    const res = await call('PUT', `${base}/clusters/${AWS}/weights`, { old_weights: stale, new_weights: stale });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String), current_weights: current });
    expect(weightsOf(AWS)).toEqual(current);
  });

  it('400 for an unknown replica, an unknown role, a non-integer weight, a non-JSON body; a JSON body is read whatever its Content-Type (curl -d sends a form type)', async () => {
    const old = weightsOf(AWS);
    const put = (next: unknown) => call('PUT', `${base}/clusters/${AWS}/weights`, { old_weights: old, new_weights: next });
    expect((await put({ ...old, reader: { 'replica-9': 100 } })).body.error).toMatch(/unknown replica 'replica-9'/);
    expect((await put({ ...old, boss: { 'replica-1': 1 } })).body.error).toMatch(/unknown role 'boss'/);
    expect((await put({ ...old, reader: { 'replica-1': 50.5, 'replica-2': 49.5 } })).status).toBe(400);
    const raw = await request(`${t.emu.url}${base}/clusters/${AWS}/weights`, { method: 'PUT', headers: json, body: '{nope' });
    expect(raw.statusCode).toBe(400);
    await raw.body.text();
    const form = await request(`${t.emu.url}${base}/clusters/${AWS}/weights`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: JSON.stringify({ old_weights: old, new_weights: old }) });
    expect(form.statusCode).toBe(200);
    await form.body.text();
    expect(t.emu.clusters.requests().at(-2)!.body).toBe('{nope'); // a non-JSON body is recorded as text
  });

  it('POST replica: adding, then running after the delay; extra path segment accepted; size checked per provider', async () => {
    const old = weightsOf(AWS);
    const bad = await call('POST', `${base}/clusters/${AWS}/replicas`, {
      replica_size: '4-16', // gcp only
      existing_replicas: { old_weights: old, new_weights: old },
      new_replica: { reader: 0, writer: 0, copyjob: 1 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/'4-16' is not available for aws/);

    const next = { ...old, reader: { 'replica-1': 34, 'replica-2': 33 } };
    const res = await call('POST', `${base}/clusters/${AWS}/replicas/extra/`, {
      replica_size: '8-32',
      existing_replicas: { old_weights: old, new_weights: next },
      new_replica: { reader: 33, writer: 0, copyjob: 1 },
    });
    expect(res).toEqual({
      status: 200,
      body: { cluster_id: AWS, new_replica: { name: 'replica-3', cpu: 8, memory_gb: 32, state: 'adding' }, operation: 'replica_add_requested' },
    });
    const c = t.emu.clusters.getCluster(AWS)!;
    expect(c.replicas['replica-3']!.state).toBe('adding');
    expect(c.cluster_weights.reader).toEqual({ 'replica-1': 34, 'replica-2': 33, 'replica-3': 33 });
    expect(c.cluster_weights.copyjob!['replica-3']).toBe(1);
    t.clock.t += DELAY_MS - 1;
    expect(t.emu.clusters.getCluster(AWS)!.replicas['replica-3']!.state).toBe('adding');
    t.clock.t += 1;
    expect(t.emu.clusters.getCluster(AWS)!.replicas['replica-3']!.state).toBe('running');
  });

  it('POST replica answers adding even with --replica-delay-ms 0 (the platform documents new_replica as adding); the listing then says running', async () => {
    const now = await startTestEmulator(0);
    try {
      const old = now.emu.clusters.getCluster(AWS)!.cluster_weights;
      const res = await request(`${now.emu.url}/v0/organizations/${ORG}/clusters/${AWS}/replicas`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ replica_size: '8-32', existing_replicas: { old_weights: old, new_weights: old }, new_replica: { writer: 0, copyjob: 1 } }),
      });
      expect(res.statusCode).toBe(200);
      expect(((await res.body.json()) as { new_replica: { state: string } }).new_replica.state).toBe('adding');
      expect(now.emu.clusters.getCluster(AWS)!.replicas['replica-3']!.state).toBe('running');
    } finally {
      await now.emu.close();
    }
  });

  it('DELETE replica: marker; removed replica still in new_weights 400; unknown replica 400; busy cluster 409', async () => {
    const old = weightsOf(GCP);
    const path = `${base}/clusters/${GCP}/replicas/replica-3/`;
    const still = await call('DELETE', path, { old_weights: old, new_weights: old });
    expect(still.status).toBe(400);
    expect(still.body.error).toMatch(/still contains the removed replica 'replica-3'/);
    expect((await call('DELETE', `${base}/clusters/${GCP}/replicas/replica-7`, { old_weights: old, new_weights: old })).status).toBe(400);
    const next = {
      writer: { 'replica-1': 100, 'replica-2': 0 },
      reader: { 'replica-1': 50, 'replica-2': 50 },
      copyjob: { 'replica-1': 1, 'replica-2': 1 },
    };
    const res = await call('DELETE', path, { old_weights: old, new_weights: next });
    expect(res).toEqual({ status: 200, body: { cluster_id: GCP, removed_replica: 'replica-3', updated_weights: next, operation: 'replica_delete_requested' } });
    expect(Object.keys(t.emu.clusters.getCluster(GCP)!.replicas)).toEqual(['replica-1', 'replica-2']);
    const busy = await call('PUT', `${base}/clusters/${GCP}/weights`, { old_weights: next, new_weights: next });
    expect(busy.status).toBe(409);
  });

  it('requests() records what was received; onRequest runs before the answer', async () => {
    const seen: string[] = [];
    t.emu.clusters.onRequest((req) => {
      seen.push(`${req.method} ${req.path}`);
      t.emu.clusters.setFlags(AWS, { can_rebalance: false });
    });
    const w = weightsOf(AWS);
    const res = await call('PUT', `${base}/clusters/${AWS}/weights`, { old_weights: w, new_weights: w });
    expect(res.status).toBe(409);
    expect(seen).toEqual([`PUT ${base}/clusters/${AWS}/weights`]);
    expect(t.emu.clusters.requests()).toEqual([
      { at: t.clock.t, method: 'PUT', path: `${base}/clusters/${AWS}/weights`, body: { old_weights: w, new_weights: w }, status: 409, response: expect.any(Object) },
    ]);
  });
});
