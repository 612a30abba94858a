// The built binary (`node dist/cli.js clusters ...`) as a child process
// against the emulator on port 0: exit codes, --yes without a terminal,
// --json, a conflict and --wait across processes, and a real pseudo-terminal
// (util-linux `script`) for confirmation and colours.
import { execFile } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Weights } from '../../src/clusters/types.js';
import { AWS, CLI, DELAY_MS, GCP, emptyDir, spawnClusters, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
beforeEach(async () => {
  t = await startTestEmulator();
});
afterEach(async () => {
  await t.emu.close();
});

describe('spoolship clusters (process)', () => {
  it('list --json and config --json print JSON that parses; exit 0', async () => {
    const list = await spawnClusters(['list', '--json', ...t.target]);
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as { clusters: unknown[] }).clusters).toHaveLength(2);
    const config = await spawnClusters(['config', '--json', ...t.target]);
    expect(config.code).toBe(0);
    expect(JSON.parse(config.stdout)).toHaveProperty('available_roles', ['writer', 'reader', 'copyjob']);
  });

  it('without a terminal a change needs --yes: exit 2 and no request at all', async () => {
    const r = await spawnClusters(['remove-replica', '--cluster', GCP, '--replica', 'replica-3', ...t.target]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/pass --yes to apply/);
    expect(t.emu.clusters.requests()).toEqual([]);
  });

  it('--yes --json applies and prints {"plan", "response"}', async () => {
    const r = await spawnClusters(['rebalance', '--cluster', AWS, '--set', 'reader=replica-1:80,replica-2:20', '--yes', '--json', ...t.target]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { plan: { request: { body: unknown } }; response: { operation: string; updated_weights: Weights } };
    expect(out.response.operation).toBe('weight_update_requested');
    expect(out.response.updated_weights.reader).toEqual({ 'replica-1': 80, 'replica-2': 20 });
    expect(out.plan.request.body).toEqual(t.writes()[0]!.body);
  });

  it('exit 2 on a validation refusal, exit 1 on a precondition refusal; nothing sent', async () => {
    expect((await spawnClusters(['add-replica', '--cluster', GCP, '--size', '3-9', '--yes', ...t.target])).code).toBe(2);
    t.emu.clusters.setFlags(GCP, { can_scale: false });
    expect((await spawnClusters(['add-replica', '--cluster', GCP, '--size', '8-32', '--yes', ...t.target])).code).toBe(1);
    expect(t.writes()).toEqual([]);
  });

  it('a conflict between the read and the write is re-planned and applied', async () => {
    let changed = false;
    t.emu.clusters.onRequest((req) => {
      if (req.method === 'POST' && !changed) {
        changed = true;
        const w = t.emu.clusters.getCluster(AWS)!.cluster_weights;
        t.emu.clusters.setWeights(AWS, { ...w, writer: { 'replica-1': 50, 'replica-2': 50 } });
      }
    });
    const r = await spawnClusters(['add-replica', '--cluster', AWS, '--size', '8-32', '--yes', ...t.target]);
    expect(r.code).toBe(0);
    expect(t.writes().map((w) => w.status)).toEqual([409, 200]);
    const body = t.writes()[1]!.body as { existing_replicas: { old_weights: Weights; new_weights: Weights } };
    expect(body.existing_replicas.old_weights.writer).toEqual({ 'replica-1': 50, 'replica-2': 50 });
    expect(body.existing_replicas.new_weights.writer).toEqual({ 'replica-1': 50, 'replica-2': 50 }); // new replica writes 0
    expect(body.existing_replicas.new_weights.reader).toEqual({ 'replica-1': 34, 'replica-2': 33 });
  });

  it('--wait follows the new replica from adding to running', async () => {
    let polls = 0;
    t.emu.clusters.onRequest((req) => {
      if (req.method === 'GET' && t.writes().length > 0 && ++polls === 2) t.clock.t += DELAY_MS;
    });
    const r = await spawnClusters(['add-replica', '--cluster', GCP, '--size', '16-64', '--yes', '--wait', '--poll-interval-ms', '10', ...t.target]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('new replica replica-4 is adding');
    expect(r.stderr).toContain(`waiting for cluster ${GCP}: operation in progress, replica-4 adding`);
    expect(r.stderr).toContain(`cluster ${GCP}: done, every replica running`);
    expect(t.emu.clusters.getCluster(GCP)!.replicas['replica-4']!.state).toBe('running');
  });

  it('on a real terminal: asks, applies on "y", colours states', async () => {
    const cmd = [process.execPath, CLI, 'clusters', 'rebalance', '--cluster', AWS, '--even', 'writer', ...t.target].map((a) => `'${a}'`).join(' ');
    const out = await new Promise<{ code: number; text: string }>((resolve) => {
      const child = execFile('script', ['-qec', cmd, '/dev/null'], { cwd: emptyDir(), env: { PATH: process.env.PATH, TERM: 'xterm' } }, (err, stdout) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, text: stdout }),
      );
      child.stdin!.end('y\n');
    });
    expect(out.code).toBe(0);
    expect(out.text).toContain(`apply this change to cluster ${AWS}? [y/N]`);
    expect(out.text).toContain('\x1b[33m100 -> 50\x1b[39m');
    expect(t.writes()).toHaveLength(1);
    expect((t.writes()[0]!.body as { new_weights: Weights }).new_weights.writer).toEqual({ 'replica-1': 50, 'replica-2': 50 });
  });
});
