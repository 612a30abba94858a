// deploy/kubernetes: a kustomize base with DaemonSet and sidecar overlays,
// rendered with `kubectl kustomize` (the test runs the real kubectl; Debian's
// kubernetes-client 1.20 embeds kustomize v2.0.3, the oldest the files are
// written for). Every source file and every rendered object validates
// offline against the Kubernetes API schemas (kubernetes-models, and
// @kubernetes-models/prometheus-operator for the PodMonitor), the spoolship
// config inside the rendered ConfigMap passes spoolship's own validation with
// the container's SPOOLSHIP_* environment, and the pod specs agree with that
// config (paths, ports, grace period vs shutdown_timeout_ms). The budget's
// Redis is closed: an ACL user whose password every container (Redis, its
// probe, each agent) takes from the spoolship-redis Secret, never a literal,
// and a NetworkPolicy that admits only the agents' pods; redis/, base/ and the
// Secret example name no namespace (the overlay or `kubectl -n` chooses).
//
// kubernetes-models checks types, required fields and formats but not
// unknown fields, so the fields that matter are asserted at their exact paths.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { DaemonSet, Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import type { IContainer, IPodSpec, IVolume } from 'kubernetes-models/v1';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/index.js';
import type { Config } from '../../src/config/types.js';
import { inFlightCeiling } from '../../src/sender/from-config.js';
import { CHECKPOINT_JOURNAL_BYTES } from '../../src/state/acker.js';
import { ROOT } from '../fleet/agents.js';

const DIR = path.join(ROOT, 'deploy', 'kubernetes');
/** `kubectl` on the PATH (.ci/run installs Debian's kubernetes-client when there is none), or SPOOLSHIP_TEST_KUBECTL. */
const KUBECTL = process.env.SPOOLSHIP_TEST_KUBECTL ?? 'kubectl';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/DaemonSet': DaemonSet,
  'apps/v1/Deployment': Deployment,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

/** The Secret that holds the budget Redis' password, and the ACL user the agents log in as. */
const REDIS_SECRET = { name: 'spoolship-redis', key: 'password' };
const REDIS_USER = 'spoolship';
/** What the test puts in the Secret: the rendered output must never contain a password, so it cannot contain this one. */
const REDIS_PASSWORD_STAND_IN = 'stand-in-0f3a9c27e1b84d56';

/** A Kubernetes quantity of bytes ("1Gi", "512Mi", "2G", "1000") in bytes. */
function quantity(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q);
  if (!m) throw new Error(`not a byte quantity: ${q}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

function parseManifests(text: string, what: string): Manifest[] {
  return parseAllDocuments(text).map((d) => {
    expect(d.errors, what).toEqual([]);
    return d.toJS() as Manifest;
  });
}

/** `kubectl kustomize deploy/kubernetes/<dir>`: what `kubectl apply -k` would apply. */
function render(dir: string): Manifest[] {
  let out: string;
  try {
    out = execFileSync(KUBECTL, ['kustomize', path.join(DIR, dir)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error(`${KUBECTL} not found: install Debian's kubernetes-client (apt-get install kubernetes-client), as .ci/run does`);
    throw new Error(`kubectl kustomize ${dir} failed: ${e.stderr ?? e.message}`);
  }
  return parseManifests(out, dir);
}

function validate(m: Manifest): void {
  const Model = MODELS[`${m.apiVersion}/${m.kind}`];
  if (!Model) throw new Error(`no schema for ${m.apiVersion} ${m.kind}`);
  new Model(m as never).validate();
}

function one<T extends Manifest>(all: Manifest[], kind: string): T {
  const found = all.filter((m) => m.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0] as T;
}

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** Warnings an example config must give here: a placeholder host, a token file that exists only in the pod. */
const EXPECTED_WARNINGS = [/^api\.base_url is the placeholder/, /^api\.token_file: .* does not exist/];

/** The ConfigMap's spoolship.yaml through the real loader (interpolation, schema, cross-checks), with the container's environment. */
async function embeddedConfig(cm: Manifest, c?: IContainer): Promise<{ config: Readonly<Config>; warnings: string[]; secrets: string[] }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-k8s-'));
  dirs.push(dir);
  const file = path.join(dir, 'spoolship.yaml');
  await writeFile(file, (cm as unknown as { data: Record<string, string> }).data['spoolship.yaml']!);
  const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.valueFrom ? secretValue(e) : (e.value ?? '')]));
  const loaded = loadConfig({ file, env, cwd: dir });
  return { config: loaded.config, warnings: loaded.warnings.filter((w) => !EXPECTED_WARNINGS.some((re) => re.test(w))), secrets: loaded.secrets ?? [] };
}

/** A variable's value from the Secret the test stands in for; any other source is a failure. */
function secretValue(e: NonNullable<IContainer['env']>[number]): string {
  expect(e.valueFrom?.secretKeyRef, `${e.name}: valueFrom`).toEqual(REDIS_SECRET);
  return REDIS_PASSWORD_STAND_IN;
}

/** The container's variables that carry the Redis password: each from the Secret's key, none a literal. */
function expectPasswordFromSecret(c: IContainer, names: string[]): void {
  for (const name of names) {
    const e = c.env?.find((x) => x.name === name);
    expect(e, `${c.name}: env ${name}`).toBeDefined();
    expect(e!.value, `${c.name}: env ${name} is not a literal`).toBeUndefined();
    expect(e!.valueFrom, `${c.name}: env ${name}`).toEqual({ secretKeyRef: REDIS_SECRET });
  }
}

function podSpec(workload: Manifest): IPodSpec {
  return (workload as unknown as { spec: { template: { spec: IPodSpec } } }).spec.template.spec;
}

function podLabels(workload: Manifest): Record<string, string> {
  return (workload as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels;
}

function mountOf(c: IContainer, volumes: IVolume[], mountPath: string): { volume: IVolume; readOnly: boolean } {
  const m = c.volumeMounts?.find((v) => v.mountPath === mountPath);
  expect(m, `a volume mounted at ${mountPath} in ${c.name}`).toBeDefined();
  return { volume: volumes.find((v) => v.name === m!.name)!, readOnly: m!.readOnly === true };
}

/** What both shapes promise: probes, grace period, scrape annotations, token_file, resources, non-root. */
function expectAgentContainer(workload: Manifest, c: IContainer, { config, secrets }: { config: Readonly<Config>; secrets: string[] }): void {
  const spec = podSpec(workload);
  const port = Number(config.admin.listen.split(':').at(-1));
  const portName = c.ports!.find((p) => p.containerPort === port)!.name;
  expect(c.args).toEqual(['run', '-c', '/etc/spoolship/spoolship.yaml']);
  expect(c.livenessProbe!.httpGet).toMatchObject({ path: '/healthz', port: portName });
  // The sidecar's readiness is its application's: /healthz there (its own test says why).
  expect(c.readinessProbe!.httpGet).toMatchObject({ path: workload.kind === 'DaemonSet' ? '/readyz' : '/healthz', port: portName });
  expect(spec.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(config.shutdown_timeout_ms);
  const annotations = (workload as unknown as { spec: { template: { metadata: { annotations: Record<string, string> } } } }).spec.template.metadata.annotations;
  expect(annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(port), 'prometheus.io/path': '/metrics' });
  expect(c.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
  expect(c.resources?.limits?.memory).toEqual(expect.any(String));
  // Non-root as 10001, from the pod's or the container's security context.
  expect({ ...spec.securityContext, ...c.securityContext }).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
  expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
  // readOnlyRootFilesystem: /tmp must be a volume.
  expect(mountOf(c, spec.volumes!, '/tmp').volume.emptyDir).toBeDefined();

  expect(config.api.token).toBeNull();
  const tokenDir = path.posix.dirname(config.api.token_file!);
  const token = mountOf(c, spec.volumes!, tokenDir);
  expect(token.readOnly).toBe(true);
  expect(token.volume.secret).toMatchObject({ secretName: 'spoolship-token', items: [{ key: 'token', path: path.posix.basename(config.api.token_file!) }] });
  expect(mountOf(c, spec.volumes!, '/etc/spoolship').volume.configMap).toBeDefined();

  // The ACL user, with the password from the Secret through REDIS_PASSWORD
  // (interpolated by the loader, so it is a secret: never printed).
  expectPasswordFromSecret(c, ['REDIS_PASSWORD']);
  const url = new URL(config.limits.redis_url!);
  expect(url.protocol).toBe('redis:');
  expect(url.username).toBe(REDIS_USER);
  expect(url.password).toBe(REDIS_PASSWORD_STAND_IN);
  expect(secrets).toContain(REDIS_PASSWORD_STAND_IN);
  // Fully qualified: a sidecar runs in its application's namespace, not Redis'.
  expect(url.hostname).toMatch(/^spoolship-redis\.spoolship\.svc\.cluster\.local$/);
  // Explicit: the default derives from the token, and a rotation mid-rollout would split the budget.
  expect(config.limits.budget_id).toBe('my-org-events');
  // The PodMonitor scrapes it: its label and its port name.
  expect(podLabels(workload)).toMatchObject({ 'spoolship-metrics': 'true' });
  expect(portName).toBe('spoolship-admin');
}

/** The ConfigMap the workload mounts at /etc/spoolship: the generated one, by its hashed name. */
function mountedConfigMap(all: Manifest[], workload: Manifest, c: IContainer): Manifest {
  const spec = podSpec(workload);
  const name = mountOf(c, spec.volumes!, '/etc/spoolship').volume.configMap!.name;
  expect(name).toMatch(/^spoolship-config-[a-z0-9]{10}$/);
  const cm = all.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name);
  expect(cm, `ConfigMap ${name}`).toBeDefined();
  return cm!;
}

/** Every YAML file under deploy/kubernetes (relative paths). */
function sourceFiles(dir = DIR): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.yaml') ? [path.relative(DIR, path.join(dir, e.name))] : []));
}

/**
 * The state-owner init container's command, run as root with CAP_CHOWN
 * alone (its securityContext), on a fresh root-owned directory (the first
 * start) and on one the agent has used (0700, its files 0600: root without
 * CAP_DAC_READ_SEARCH cannot list it). A `chown -R` failed on the second, so
 * no pod of the DaemonSet started again after its first run.
 */
function expectStateOwnerWorks(command: string[], stateDir: string): void {
  const base = mkdtempSync(path.join(os.tmpdir(), 'spoolship-state-owner-'));
  try {
    const fresh = path.join(base, 'fresh');
    const used = path.join(base, 'used');
    mkdirSync(fresh, { mode: 0o755 });
    mkdirSync(used, { mode: 0o700 });
    writeFileSync(path.join(used, 'checkpoint'), 'x', { mode: 0o600 });
    chownSync(path.join(used, 'checkpoint'), 10001, 10001);
    chownSync(used, 10001, 10001);
    chmodSync(used, 0o700);
    for (const dir of [fresh, used]) {
      const argv = command.map((a) => a.split(stateDir).join(dir));
      execFileSync('setpriv', ['--bounding-set', '-all,+chown', '--inh-caps', '-all', '--', ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
      const st = statSync(dir);
      expect({ dir: path.basename(dir), uid: st.uid, gid: st.gid }).toEqual({ dir: path.basename(dir), uid: 10001, gid: 10001 });
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

describe('deploy/kubernetes', () => {
  const overlays = { daemonset: render('overlays/daemonset'), sidecar: render('overlays/sidecar'), redis: render('redis'), base: render('base') };

  it('is a kustomize base with daemonset and sidecar overlays; every file and every rendered object validates against the API schemas', async () => {
    expect(sourceFiles().sort()).toEqual([
      'base/kustomization.yaml',
      'base/podmonitor.yaml',
      'base/spoolship.yaml',
      'overlays/daemonset/daemonset.yaml',
      'overlays/daemonset/kustomization.yaml',
      'overlays/daemonset/namespace.yaml',
      'overlays/sidecar/deployment.yaml',
      'overlays/sidecar/kustomization.yaml',
      'redis/kustomization.yaml',
      'redis/networkpolicy.yaml',
      'redis/redis.yaml',
      'secret.example.yaml',
    ]);
    for (const f of sourceFiles().filter((x) => !x.endsWith('kustomization.yaml') && x !== 'base/spoolship.yaml')) {
      for (const m of parseManifests(await readFile(path.join(DIR, f), 'utf8'), f)) expect(() => validate(m), `${f}: ${m.kind} ${m.metadata.name}`).not.toThrow();
    }
    for (const [name, all] of Object.entries(overlays)) {
      expect(all.length, name).toBeGreaterThan(1);
      for (const m of all) expect(() => validate(m), `${name}: ${m.kind} ${m.metadata.name}`).not.toThrow();
    }
    expect(overlays.daemonset.map((m) => `${m.kind}/${m.metadata.namespace ?? ''}`).sort()).toEqual([
      'ConfigMap/spoolship',
      'DaemonSet/spoolship',
      'Deployment/spoolship',
      'Namespace/',
      'NetworkPolicy/spoolship',
      'PodMonitor/spoolship',
      'Service/spoolship',
    ]);
    expect(overlays.sidecar.map((m) => `${m.kind}/${m.metadata.namespace ?? ''}`).sort()).toEqual(['ConfigMap/my-app', 'Deployment/my-app', 'PodMonitor/my-app']);
  });

  it('redis/, base/ and the Secret example name no namespace: the overlay or `kubectl -n` chooses', async () => {
    expect(overlays.redis.map((m) => `${m.kind}/${m.metadata.namespace ?? ''}`).sort()).toEqual(['Deployment/', 'NetworkPolicy/', 'Service/']);
    expect(overlays.base.map((m) => `${m.kind}/${m.metadata.namespace ?? ''}`).sort()).toEqual(['ConfigMap/', 'PodMonitor/']);
    for (const f of sourceFiles().filter((x) => !x.startsWith('overlays/') && x !== 'base/spoolship.yaml')) {
      const text = await readFile(path.join(DIR, f), 'utf8');
      if (f.endsWith('kustomization.yaml')) expect(parse(text).namespace, `${f}: namespace`).toBeUndefined();
      else for (const m of parseManifests(text, f)) expect(m.metadata.namespace, `${f}: ${m.kind} ${m.metadata.name}`).toBeUndefined();
    }
  });

  it('no password is in the rendered output: no Secret, no literal in any env, the Redis command or the config', () => {
    const example = parseManifests(readFileSync(path.join(DIR, 'secret.example.yaml'), 'utf8'), 'secret.example.yaml');
    const redisSecret = example.find((m) => m.kind === 'Secret' && m.metadata.name === REDIS_SECRET.name) as unknown as { stringData: Record<string, string> };
    expect(redisSecret, 'secret.example.yaml: Secret spoolship-redis').toBeDefined();
    expect(Object.keys(redisSecret.stringData)).toEqual([REDIS_SECRET.key]);
    const placeholder = redisSecret.stringData[REDIS_SECRET.key]!;
    expect(placeholder).toMatch(/^REPLACE_WITH_/);
    for (const [name, all] of Object.entries(overlays)) {
      expect(all.filter((m) => m.kind === 'Secret'), name).toEqual([]);
      const text = JSON.stringify(all);
      expect(text, name).not.toContain(placeholder);
      expect(text, name).not.toMatch(/requirepass|--user \S+ on >(?!\$REDIS_PASSWORD)/);
      for (const w of all.filter((m) => m.kind === 'Deployment' || m.kind === 'DaemonSet')) {
        const spec = podSpec(w);
        for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
          for (const e of c.env ?? []) if (/PASS|AUTH|SECRET|TOKEN/.test(e.name)) expect(e.value, `${name}: ${c.name} env ${e.name}`).toBeUndefined();
        }
      }
      for (const cm of all.filter((m) => m.kind === 'ConfigMap')) {
        const raw = parse((cm as unknown as { data: Record<string, string> }).data['spoolship.yaml']!).limits.redis_url as string;
        expect(raw, `${name}: redis_url as written`).toBe(`redis://${REDIS_USER}:\${REDIS_PASSWORD}@spoolship-redis.spoolship.svc.cluster.local:6379`);
      }
    }
  });

  it('the schema check catches a wrong value (it can fail)', () => {
    const ds = one(overlays.daemonset, 'DaemonSet');
    const broken = structuredClone(ds);
    (podSpec(broken) as { terminationGracePeriodSeconds: unknown }).terminationGracePeriodSeconds = 'forty';
    expect(() => validate(broken)).toThrow(/terminationGracePeriodSeconds/);
    const noImage = structuredClone(ds);
    podSpec(noImage).containers[0]!.ports![0]!.containerPort = 'admin' as unknown as number;
    expect(() => validate(noImage)).toThrow(/containerPort/);
    const pm = structuredClone(one(overlays.daemonset, 'PodMonitor')) as unknown as { spec: { podMetricsEndpoints: unknown } };
    pm.spec.podMetricsEndpoints = 'spoolship-admin';
    expect(() => validate(pm as unknown as Manifest)).toThrow(/podMetricsEndpoints/);
  });

  it('the DaemonSet keeps spool and state on the host, few connections per node, one explicit budget, and stops within its grace period', async () => {
    const all = overlays.daemonset;
    const ds = one(all, 'DaemonSet');
    const spec = podSpec(ds);
    const c = spec.containers.find((x) => x.name === 'spoolship')!;
    const loaded = await embeddedConfig(mountedConfigMap(all, ds, c), c);
    const { config, warnings } = loaded;
    expect(warnings).toEqual([]);
    expectAgentContainer(ds, c, loaded);
    // Many nodes behind one NAT share the platform's 250 connections per IP.
    expect(config.limits.max_connections).toBeLessThanOrEqual(8);
    // Threads bounded whatever the node's size (auto would take every CPU), within the measured 16 (peak RSS <= 250 MB) and the memory limit.
    expect(config.compression.threads).toEqual(expect.any(Number));
    expect(config.compression.threads as number).toBeLessThanOrEqual(16);
    expect(quantity(String(c.resources!.limits!.memory))).toBeGreaterThanOrEqual(250 * 2 ** 20);
    expect(parse(await readFile(path.join(DIR, 'base/spoolship.yaml'), 'utf8')).limits.budget_id).toBe('my-org-events');

    const spool = mountOf(c, spec.volumes!, config.spool.dir);
    expect(spool.volume.hostPath?.path).toBe(config.spool.dir);
    expect(spool.readOnly).toBe(config.spool.on_complete === 'keep');
    const state = mountOf(c, spec.volumes!, config.state_dir);
    expect(state.volume.hostPath?.path).toBe(config.state_dir);
    expect(state.readOnly).toBe(false);
    // The kubelet creates hostPath dirs as root: the init container hands the state dir to the agent's user.
    const init = spec.initContainers!.find((x) => x.name === 'state-owner')!;
    expect(init.command!.join(' ')).toContain(config.state_dir);
    expect(init.securityContext?.capabilities).toEqual({ drop: ['ALL'], add: ['CHOWN'] });
    expectStateOwnerWorks(init.command!, config.state_dir);
    // A surge pod would find the state_dir locked by the old one.
    expect((ds as unknown as { spec: { updateStrategy: unknown } }).spec.updateStrategy).toMatchObject({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 0 } });
  });

  it('the sidecar shares an emptyDir spool with the application, stops after it, and leaves the application its own uid', async () => {
    const all = overlays.sidecar;
    const dep = one(all, 'Deployment');
    const spec = podSpec(dep);
    const c = spec.initContainers!.find((x) => x.name === 'spoolship')!;
    expect(c.restartPolicy).toBe('Always'); // native sidecar: started first, stopped last
    const loaded = await embeddedConfig(mountedConfigMap(all, dep, c), c);
    const { config, warnings } = loaded;
    expect(warnings).toEqual([]);
    expectAgentContainer(dep, c, loaded);
    expect(config.spool.on_complete).toBe('delete'); // from the container's environment
    // A native sidecar's readiness is part of its pod's: /readyz (503 while parked or stalled) would take
    // the application out of its Service during an outage or a revoked token.
    expect(c.readinessProbe!.httpGet!.path).toBe('/healthz');
    // compression.threads auto follows the CPU limit: the 2-thread case (peak RSS <= 150 MB), under the memory limit.
    expect(config.compression.threads).toBe('auto');
    expect(quantity(String(c.resources!.limits!.cpu))).toBeLessThanOrEqual(2);
    expect(quantity(String(c.resources!.limits!.memory))).toBeGreaterThanOrEqual(150 * 2 ** 20);

    // No user forced on the pod: the application container runs as its image says.
    for (const key of ['runAsUser', 'runAsGroup', 'runAsNonRoot'] as const) expect(spec.securityContext?.[key], `pod securityContext.${key}`).toBeUndefined();
    const app = spec.containers.find((x) => x.name === 'app')!;
    expect(app.securityContext?.runAsUser).toBeUndefined();
    expect(c.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 });

    const spool = mountOf(c, spec.volumes!, config.spool.dir);
    expect(spool.volume.emptyDir).toBeDefined();
    expect(app.volumeMounts!.find((m) => m.name === spool.volume.name)?.mountPath).toBe(config.spool.dir);
    // An emptyDir's root is root's and 0777: the agent (uid 10001) cannot
    // make it 0700 and refuses it (SPOOLSHIP_ERR_STATE_DIR_UNSAFE). Its
    // state_dir is a directory it creates inside the volume.
    expect(path.posix.basename(config.state_dir)).toBe('state');
    const stateVolume = mountOf(c, spec.volumes!, path.posix.dirname(config.state_dir)).volume.emptyDir;
    expect(stateVolume).toBeDefined();
    expect(c.volumeMounts!.some((m) => m.mountPath === config.state_dir)).toBe(false);
    // Past an emptyDir's sizeLimit the kubelet evicts the pod (its spool
    // with it) rather than failing a write: the state volume holds all the
    // state_dir may grow to (the disk queue, dead letters, the journals
    // until their checkpoint, two checkpoints and the bodies in flight).
    const stateBound =
      config.queue.max_bytes + config.dead_letter.max_bytes + CHECKPOINT_JOURNAL_BYTES + 2 * 1024 * 1024 + inFlightCeiling(config) * config.batch.max_bytes;
    expect(stateBound, `state_dir bound ${stateBound} within sizeLimit ${String(stateVolume!.sizeLimit)}`).toBeLessThanOrEqual(quantity(String(stateVolume!.sizeLimit)));
  });

  it('the PodMonitor selects the pods of both shapes on the agent\'s admin port', () => {
    for (const [shape, all] of [['daemonset', overlays.daemonset], ['sidecar', overlays.sidecar]] as const) {
      const pm = one(all, 'PodMonitor') as unknown as Manifest & { spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: Array<{ port: string; path: string }> } };
      const workload = all.find((m) => m.kind === (shape === 'daemonset' ? 'DaemonSet' : 'Deployment'))!;
      expect(pm.metadata.namespace, shape).toBe(workload.metadata.namespace);
      expect(podLabels(workload), shape).toMatchObject(pm.spec.selector.matchLabels);
      const spec = podSpec(workload);
      const agent = [...spec.containers, ...(spec.initContainers ?? [])].find((x) => x.name === 'spoolship')!;
      expect(pm.spec.podMetricsEndpoints).toEqual([{ port: 'spoolship-admin', path: '/metrics', interval: '30s' }]);
      expect(agent.ports!.map((p) => p.name), shape).toContain(pm.spec.podMetricsEndpoints[0]!.port);
    }
  });

  it('the Redis Service selects the Redis pods and matches the agents\' redis_url', async () => {
    const all = overlays.daemonset;
    const svc = one(all, 'Service') as unknown as { metadata: { name: string; namespace: string }; spec: { selector: Record<string, string>; ports: Array<{ port: number }> } };
    const dep = one(all, 'Deployment');
    expect(podLabels(dep)).toMatchObject(svc.spec.selector);
    const ds = one(all, 'DaemonSet');
    const c = podSpec(ds).containers[0]!;
    const { config } = await embeddedConfig(mountedConfigMap(all, ds, c), c);
    const url = new URL(config.limits.redis_url!);
    expect(url.hostname).toBe(`${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local`);
    expect(Number(url.port)).toBe(svc.spec.ports[0]!.port);
  });

  it('Redis runs with the agents\' ACL user only (default user off), its password and its probe\'s from the Secret', async () => {
    for (const [name, all] of [['redis', overlays.redis], ['daemonset', overlays.daemonset]] as const) {
      const spec = podSpec(one(all, 'Deployment'));
      const redis = spec.containers.find((x) => x.name === 'redis')!;
      // Redis does not expand variables in its arguments: a shell does, then execs it (one process, PID 1).
      expect(redis.args, name).toBeUndefined();
      expect(redis.command?.slice(0, 2), name).toEqual(['sh', '-c']);
      const script = redis.command![2]!;
      expect(script, name).toMatch(/^exec redis-server /);
      expect(script, name).toContain('--user default off');
      expect(script, name).toContain(`--user ${REDIS_USER} on ">$REDIS_PASSWORD" "~spoolship:*"`);
      expectPasswordFromSecret(redis, ['REDIS_PASSWORD', 'REDISCLI_AUTH']);
      // The probe logs in as the ACL user (REDISCLI_AUTH) and needs PONG: redis-cli exits 0 on NOAUTH.
      const probe = redis.livenessProbe!.exec!.command!;
      expect(probe.slice(0, 2), name).toEqual(['sh', '-c']);
      expect(probe[2], name).toMatch(new RegExp(`^redis-cli --user ${REDIS_USER} ping \\| grep -qx PONG$`));
    }
    // The agents log in as that user (the key pattern covers spoolship:budget:{id} and its :pause).
    const ds = one(overlays.daemonset, 'DaemonSet');
    const c = podSpec(ds).containers[0]!;
    const { config } = await embeddedConfig(mountedConfigMap(overlays.daemonset, ds, c), c);
    expect(new URL(config.limits.redis_url!).username).toBe(REDIS_USER);
  });

  it('the NetworkPolicy admits to Redis only the agents\' pods, from any namespace, on 6379', () => {
    type Policy = Manifest & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Array<{ from: Array<{ podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: unknown }>; ports: Array<{ port: number; protocol: string }> }> } };
    const np = one(overlays.redis, 'NetworkPolicy') as Policy;
    const redisPods = podLabels(one(overlays.redis, 'Deployment'));
    expect(redisPods).toMatchObject(np.spec.podSelector.matchLabels);
    expect(np.spec.policyTypes).toEqual(['Ingress']);
    expect(np.spec.ingress).toHaveLength(1);
    const [rule] = np.spec.ingress;
    expect(rule!.ports).toEqual([{ port: 6379, protocol: 'TCP' }]);
    const redisPort = podSpec(one(overlays.redis, 'Deployment')).containers[0]!.ports!.find((p) => p.name === 'redis')!.containerPort;
    expect(redisPort).toBe(6379);
    // One peer: pods with the agents' label, in every namespace (sidecars live in their application's).
    expect(rule!.from).toHaveLength(1);
    const [peer] = rule!.from;
    expect(peer!.namespaceSelector).toEqual({});
    const allowed = peer!.podSelector!.matchLabels;
    expect(Object.keys(allowed).length).toBeGreaterThan(0);
    const matches = (labels: Record<string, string>): boolean => Object.entries(allowed).every(([k, v]) => labels[k] === v);
    expect(matches(podLabels(one(overlays.daemonset, 'DaemonSet'))), 'DaemonSet pods').toBe(true);
    expect(matches(podLabels(one(overlays.sidecar, 'Deployment'))), 'sidecar pods').toBe(true);
    expect(matches(redisPods), 'Redis pods').toBe(false);
    // Not the scrape label: a pod that is only scraped does not reach Redis.
    expect(Object.keys(allowed)).not.toContain('spoolship-metrics');
  });
});
