// ClusterClient against the emulator and against misbehaving servers: auth
// forms, typed errors carrying status/body/hint, and request timeouts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../src/clusters/client.js';
import { ApiError, NetworkError } from '../../src/errors.js';
import { ADMIN, AWS, ORG, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
const clients: ClusterClient[] = [];
const client = (over: Partial<ConstructorParameters<typeof ClusterClient>[0]> = {}) => {
  const c = new ClusterClient({ baseUrl: t.emu.url, org: ORG, token: ADMIN, ...over });
  clients.push(c);
  return c;
};
beforeEach(async () => {
  t = await startTestEmulator();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await t.emu.close();
});

function seen(): Array<{ auth: string | undefined; query: string; type: string | undefined }> {
  const out: Array<{ auth: string | undefined; query: string; type: string | undefined }> = [];
  t.emu.clusters.onRequest((req) => void out.push({ auth: req.headers['authorization'], query: req.query.toString(), type: req.headers['content-type'] }));
  return out;
}

describe('ClusterClient', () => {
  it('sends Bearer auth and JSON bodies; returns the parsed responses of all five endpoints', async () => {
    const log = seen();
    const c = client();
    const listing = await c.listClusters();
    expect(listing.clusters.map((x) => x.cluster_id)).toContain(AWS);
    expect((await c.getConfiguration()).available_roles).toEqual(['writer', 'reader', 'copyjob']);
    const w = listing.clusters[0]!.cluster_weights;
    expect((await c.updateWeights(AWS, { old_weights: w, new_weights: w })).operation).toBe('weight_update_requested');
    t.clock.t += 5000;
    const add = await c.addReplica(AWS, { replica_size: '8-32', existing_replicas: { old_weights: w, new_weights: w }, new_replica: { copyjob: 1 } });
    expect(add.new_replica).toEqual({ name: 'replica-3', cpu: 8, memory_gb: 32, state: 'adding' });
    t.clock.t += 5000;
    const now = t.emu.clusters.getCluster(AWS)!.cluster_weights;
    const { ['replica-3']: _gone, ...copyjob } = now.copyjob!;
    const del = await c.removeReplica(AWS, 'replica-3', { old_weights: now, new_weights: { ...now, copyjob } });
    expect(del).toMatchObject({ removed_replica: 'replica-3', operation: 'replica_delete_requested' });
    expect(log.every((l) => l.auth === `Bearer ${ADMIN}` && l.query === '')).toBe(true);
    expect(log.filter((l) => l.type !== undefined).map((l) => l.type)).toEqual(['application/json', 'application/json', 'application/json']);
  });

  it('the ?token= form on the configuration endpoint sends no Authorization header', async () => {
    const log = seen();
    const cfg = await client().getConfiguration({ tokenInQuery: true });
    expect(cfg.available_sizes.aws).toHaveLength(8);
    expect(log).toEqual([{ auth: undefined, query: `token=${ADMIN}`, type: undefined }]);
  });

  it('non-2xx: ApiError with status, the server body and a hint', async () => {
    const bad = client({ token: 'nope' });
    const e403 = await bad.listClusters().catch((e: unknown) => e);
    expect(e403).toBeInstanceOf(ApiError);
    expect(e403).toMatchObject({ status: 403, code: 'SPOOLSHIP_ERR_API', exitCode: 1 });
    expect((e403 as ApiError).body).toContain('token not valid');
    expect((e403 as ApiError).message).toMatch(/give an org-admin token/);

    const e404 = await client({ org: 'other' }).listClusters().catch((e: unknown) => e);
    expect(e404).toMatchObject({ status: 404 });
    expect((e404 as ApiError).message).toMatch(/check --org/);

    const stale = { writer: { 'replica-1': 1 } };
    const e409 = (await client().updateWeights(AWS, { old_weights: stale, new_weights: stale }).catch((e: unknown) => e)) as ApiError;
    expect(e409.status).toBe(409);
    expect(JSON.parse(e409.body).current_weights).toEqual(t.emu.clusters.getCluster(AWS)!.cluster_weights);
  });
});

describe('ClusterClient against a misbehaving server', () => {
  let server: Server | null = null;
  afterEach(async () => {
    const s = server;
    server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  });
  async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
    server = createServer(handler);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('a server that echoes the admin token back: the error shows *** where the token was, whatever the status', async () => {
    const url = await serve((req, res) => {
      res.writeHead(req.method === 'GET' ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ headers: { authorization: req.headers.authorization } }));
    });
    for (const call of [(c: ClusterClient) => c.listClusters(), (c: ClusterClient) => c.updateWeights(AWS, { old_weights: {}, new_weights: {} })]) {
      const err = (await call(client({ baseUrl: url, token: 'p.admin-sekret' })).catch((e: unknown) => e)) as ApiError;
      expect(err).toBeInstanceOf(ApiError);
      expect(err.message).not.toContain('admin-sekret');
      expect(err.body).not.toContain('admin-sekret');
      expect(err.message).toContain('Bearer ***');
    }
  });

  it('an answer larger than 4 MiB (an endless one too) is not read on: ApiError saying so, memory bounded', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Endless: chunks until the client goes away.
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const more = () => {
        while (res.write(chunk));
      };
      res.on('drain', more);
      res.on('close', () => res.off('drain', more));
      more();
    });
    const err = (await client({ baseUrl: url, timeoutMs: 30_000 }).listClusters().catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toMatch(/the answer is larger than 4 MiB, which no cluster API answer is; check that --base-url/);
  });

  it('a 2xx to a modifying request without its fields: ApiError saying the change may have been applied', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    const err = (await client({ baseUrl: url }).updateWeights(AWS, { old_weights: {}, new_weights: {} }).catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toMatch(/not shaped like the cluster API's answer to this request; the change may have been made: check with 'spoolship clusters list'/);
  });

  it('no answer within timeoutMs: NetworkError naming the timeout', async () => {
    const url = await serve(() => {}); // accepts, never answers
    const err = await client({ baseUrl: url, timeoutMs: 100 }).listClusters().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).message).toMatch(/no answer within 100 ms; .*--timeout-ms/);
  });

  it('a refused connection: NetworkError naming the code; a token in the URL is redacted', async () => {
    const url = await serve(() => {});
    await new Promise((r) => server!.close(r));
    server = null;
    const err = await client({ baseUrl: url, token: 'sekret' }).getConfiguration({ tokenInQuery: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).message).toMatch(/no answer \(ECONNREFUSED\)/);
    expect((err as NetworkError).message).not.toContain('sekret');
  });

  it('a 200 that is not JSON: ApiError pointing at --base-url; a base URL path prefix is kept', async () => {
    const paths: string[] = [];
    const url = await serve((req, res) => {
      paths.push(req.url!);
      res.end('<html>login</html>');
    });
    const err = await client({ baseUrl: `${url}/proxy/` }).listClusters().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 200 });
    expect((err as ApiError).message).toMatch(/not JSON; check that --base-url/);
    expect(paths).toEqual([`/proxy/v0/organizations/${ORG}/clusters`]);
  });

  it('a listing whose weight is not an integer >= 0 (a string): ApiError, not "weights sum to 010000" later', async () => {
    const listing = { clusters: [{ id: 'c1', replicas: { r0: {}, r1: {} }, cluster_weights: { writer: { r0: '0', r1: 100 } } }] };
    const url = await serve((_req, res) => res.end(JSON.stringify(listing)));
    const err = await client({ baseUrl: url }).listClusters().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toMatch(/not shaped like the cluster API/);
  });

  it('a 200 JSON answer that is not a listing: ApiError, not a crash later', async () => {
    const url = await serve((_req, res) => res.end('{"data":[]}'));
    const err = await client({ baseUrl: url }).listClusters().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toMatch(/not shaped like the cluster API/);
  });
});
