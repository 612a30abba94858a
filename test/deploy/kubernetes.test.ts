// deploy/kubernetes: every manifest validates offline against the Kubernetes
// API schemas (kubernetes-models), the spoolship config inside each
// ConfigMap passes spoolship's own validation, and the pod specs agree with
// those configs (paths, ports, grace period vs shutdown_timeout_ms).
//
// kubernetes-models checks types, required fields and formats but not
// unknown fields, so the fields that matter are asserted at their exact paths.
import { readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DaemonSet, Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import type { IContainer, IPodSpec, IVolume } from 'kubernetes-models/v1';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/index.js';
import type { Config } from '../../src/config/types.js';
import { ROOT } from '../fleet/agents.js';

const DIR = path.join(ROOT, 'deploy', 'kubernetes');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/DaemonSet': DaemonSet,
  'apps/v1/Deployment': Deployment,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
};

async function manifests(file: string): Promise<Manifest[]> {
  const docs = parseAllDocuments(await readFile(path.join(DIR, file), 'utf8'));
  return docs.map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as Manifest;
  });
}

function validate(m: Manifest): void {
  const Model = MODELS[`${m.apiVersion}/${m.kind}`];
  if (!Model) throw new Error(`no schema for ${m.apiVersion} ${m.kind}`);
  new Model(m as never).validate();
}

function one<T extends Manifest>(all: Manifest[], kind: string): T {
  const found = all.filter((m) => m.kind === kind);
  expect(found).toHaveLength(1);
  return found[0] as T;
}

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** Warnings an example config must give here: a placeholder host, a token file that exists only in the pod. */
const EXPECTED_WARNINGS = [/^api\.base_url is the placeholder/, /^api\.token_file: .* does not exist/];

/** The ConfigMap's spoolship.yaml through the real loader (interpolation, schema, cross-checks). */
async function embeddedConfig(cm: Manifest): Promise<{ config: Readonly<Config>; warnings: string[] }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-k8s-'));
  dirs.push(dir);
  const file = path.join(dir, 'spoolship.yaml');
  await writeFile(file, (cm as unknown as { data: Record<string, string> }).data['spoolship.yaml']!);
  const loaded = loadConfig({ file, env: {}, cwd: dir });
  return { config: loaded.config, warnings: loaded.warnings.filter((w) => !EXPECTED_WARNINGS.some((re) => re.test(w))) };
}

function podSpec(workload: Manifest): IPodSpec {
  return (workload as unknown as { spec: { template: { spec: IPodSpec } } }).spec.template.spec;
}

function mountOf(c: IContainer, volumes: IVolume[], mountPath: string): { volume: IVolume; readOnly: boolean } {
  const m = c.volumeMounts?.find((v) => v.mountPath === mountPath);
  expect(m, `a volume mounted at ${mountPath} in ${c.name}`).toBeDefined();
  return { volume: volumes.find((v) => v.name === m!.name)!, readOnly: m!.readOnly === true };
}

/** What both shapes promise: probes, grace period, scrape annotations, token_file, resources, non-root. */
function expectAgentContainer(workload: Manifest, c: IContainer, config: Readonly<Config>): void {
  const spec = podSpec(workload);
  const port = Number(config.admin.listen.split(':').at(-1));
  const portName = c.ports!.find((p) => p.containerPort === port)!.name;
  expect(c.args).toEqual(['run', '-c', '/etc/spoolship/spoolship.yaml']);
  expect(c.livenessProbe!.httpGet).toMatchObject({ path: '/healthz', port: portName });
  expect(c.readinessProbe!.httpGet).toMatchObject({ path: '/readyz', port: portName });
  expect(spec.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(config.shutdown_timeout_ms);
  const annotations = (workload as unknown as { spec: { template: { metadata: { annotations: Record<string, string> } } } }).spec.template.metadata.annotations;
  expect(annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(port), 'prometheus.io/path': '/metrics' });
  expect(c.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
  expect(c.resources?.limits?.memory).toEqual(expect.any(String));
  expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
  expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
  // readOnlyRootFilesystem: /tmp must be a volume.
  expect(mountOf(c, spec.volumes!, '/tmp').volume.emptyDir).toBeDefined();

  expect(config.api.token).toBeNull();
  const tokenDir = path.posix.dirname(config.api.token_file!);
  const token = mountOf(c, spec.volumes!, tokenDir);
  expect(token.readOnly).toBe(true);
  expect(token.volume.secret).toMatchObject({ secretName: 'spoolship-token', items: [{ key: 'token', path: path.posix.basename(config.api.token_file!) }] });
  expect(mountOf(c, spec.volumes!, '/etc/spoolship').volume.configMap).toBeDefined();

  expect(config.limits.redis_url).toMatch(/^redis:\/\/spoolship-redis\.spoolship\.svc/);
  expect(config.limits.budget_id).toBe('my-org-events');
}

describe('deploy/kubernetes', () => {
  it('every manifest validates against the Kubernetes API schemas', async () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'));
    expect(files.sort()).toEqual(['daemonset.yaml', 'namespace.yaml', 'redis.yaml', 'secret.example.yaml', 'sidecar.yaml']);
    for (const f of files) for (const m of await manifests(f)) expect(() => validate(m), `${f}: ${m.kind} ${m.metadata.name}`).not.toThrow();
  });

  it('the schema check catches a wrong value (it can fail)', async () => {
    const ds = one(await manifests('daemonset.yaml'), 'DaemonSet');
    const broken = structuredClone(ds);
    (podSpec(broken) as { terminationGracePeriodSeconds: unknown }).terminationGracePeriodSeconds = 'forty';
    expect(() => validate(broken)).toThrow(/terminationGracePeriodSeconds/);
    const noImage = structuredClone(ds);
    podSpec(noImage).containers[0]!.ports![0]!.containerPort = 'admin' as unknown as number;
    expect(() => validate(noImage)).toThrow(/containerPort/);
  });

  it('the DaemonSet keeps spool and state on the host, shares the Redis budget, and stops within its grace period', async () => {
    const all = await manifests('daemonset.yaml');
    const ds = one(all, 'DaemonSet');
    const { config, warnings } = await embeddedConfig(one(all, 'ConfigMap'));
    expect(warnings).toEqual([]);
    const spec = podSpec(ds);
    const c = spec.containers.find((x) => x.name === 'spoolship')!;
    expectAgentContainer(ds, c, config);

    const spool = mountOf(c, spec.volumes!, config.spool.dir);
    expect(spool.volume.hostPath?.path).toBe(config.spool.dir);
    expect(spool.readOnly).toBe(config.spool.on_complete === 'keep');
    const state = mountOf(c, spec.volumes!, config.state_dir);
    expect(state.volume.hostPath?.path).toBe(config.state_dir);
    expect(state.readOnly).toBe(false);
    // The kubelet creates hostPath dirs as root: the init container hands the state dir to the agent's user.
    const init = spec.initContainers!.find((x) => x.name === 'state-owner')!;
    expect(init.command).toEqual(['chown', '-R', '10001:10001', config.state_dir]);
    expect(init.securityContext?.capabilities).toEqual({ drop: ['ALL'], add: ['CHOWN'] });
    // A surge pod would find the state_dir locked by the old one.
    expect((ds as unknown as { spec: { updateStrategy: unknown } }).spec.updateStrategy).toMatchObject({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 0 } });
  });

  it('the sidecar shares an emptyDir spool with the application and stops after it', async () => {
    const all = await manifests('sidecar.yaml');
    const dep = one(all, 'Deployment');
    const { config, warnings } = await embeddedConfig(one(all, 'ConfigMap'));
    expect(warnings).toEqual([]);
    const spec = podSpec(dep);
    const c = spec.initContainers!.find((x) => x.name === 'spoolship')!;
    expect(c.restartPolicy).toBe('Always'); // native sidecar: started first, stopped last
    expectAgentContainer(dep, c, config);

    const spool = mountOf(c, spec.volumes!, config.spool.dir);
    expect(spool.volume.emptyDir).toBeDefined();
    const app = spec.containers.find((x) => x.name === 'app')!;
    expect(app.volumeMounts!.find((m) => m.name === spool.volume.name)?.mountPath).toBe(config.spool.dir);
    expect(mountOf(c, spec.volumes!, config.state_dir).volume.emptyDir).toBeDefined();
  });

  it('the Redis Service selects the Redis pods and matches the agents\' redis_url', async () => {
    const all = await manifests('redis.yaml');
    const svc = one(all, 'Service') as unknown as { metadata: { name: string; namespace: string }; spec: { selector: Record<string, string>; ports: Array<{ port: number }> } };
    const dep = one(all, 'Deployment') as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } };
    expect(dep.spec.template.metadata.labels).toMatchObject(svc.spec.selector);
    const { config } = await embeddedConfig(one(await manifests('daemonset.yaml'), 'ConfigMap'));
    const url = new URL(config.limits.redis_url!);
    expect(url.hostname.split('.').slice(0, 2)).toEqual([svc.metadata.name, svc.metadata.namespace]);
    expect(Number(url.port)).toBe(svc.spec.ports[0]!.port);
  });
});
