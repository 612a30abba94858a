// Dockerfile and .dockerignore. No Docker engine runs here, so the runtime
// stage is replayed on the host: the production install (`npm ci
// --omit=dev`, the Dockerfile's own command) in a temp copy laid out like the
// image, the build stage's dist/ (vitest's globalSetup builds it), then
// `spoolship --version`, a short `spoolship run` shipping to the emulator,
// the HEALTHCHECK script and a SIGTERM stop, all as the image's non-root
// uid (setpriv).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import picomatch from 'picomatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { AgentProcess, lines, ROOT } from '../fleet/agents.js';
import { waitFor } from '../fleet/helpers.js';

interface Instruction {
  stage: number;
  op: string;
  args: string;
}

function parseDockerfile(text: string): { stages: string[]; ins: Instruction[] } {
  const joined = text.replace(/\\\n/g, ' ');
  const ins: Instruction[] = [];
  const stages: string[] = [];
  for (const raw of joined.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+)\s+(.*)$/.exec(line)!;
    const op = m[1]!.toUpperCase();
    if (op === 'FROM') stages.push(m[2]!);
    ins.push({ stage: stages.length - 1, op, args: m[2]!.replace(/\s+/g, ' ') });
  }
  return { stages, ins };
}

const dockerfile = parseDockerfile(await readFile(path.join(ROOT, 'Dockerfile'), 'utf8'));
const last = dockerfile.stages.length - 1;
const final = (op: string) => dockerfile.ins.filter((i) => i.stage === last && i.op === op);
const UID = 10001;

describe('Dockerfile', () => {
  it('builds with dev dependencies and runs on a slim Node LTS image with production dependencies only', () => {
    const { stages, ins } = dockerfile;
    expect(stages).toHaveLength(2);
    // Both stages on one slim Node LTS image, pinned by the digest of its index (the tag is for people).
    const image = /^NODE_IMAGE=node:(\d+)-slim@sha256:([0-9a-f]{64})$/.exec(ins.find((i) => i.op === 'ARG')!.args);
    expect(image, 'ARG NODE_IMAGE=node:<major>-slim@sha256:<64 hex>').not.toBeNull();
    expect(Number(image![1]) % 2).toBe(0); // even majors are the LTS lines
    expect(stages[0]).toBe('${NODE_IMAGE} AS build');
    expect(stages[1]).toBe('${NODE_IMAGE} AS runtime');
    const buildRuns = ins.filter((i) => i.stage === 0 && i.op === 'RUN').map((i) => i.args);
    expect(buildRuns).toEqual(['npm ci --no-audit --no-fund', 'npm run build']);
    expect(final('RUN')[0]!.args).toMatch(/^npm ci --omit=dev /);
    expect(final('COPY').map((i) => i.args)).toContain('--from=build /src/dist ./dist');
  });

  it('runs as a non-root numeric user, with the state dir and the spool as volumes, a /healthz HEALTHCHECK, ENTRYPOINT spoolship and CMD run', () => {
    expect(final('USER').map((i) => i.args)).toEqual([`${UID}:${UID}`]);
    expect(final('VOLUME').map((i) => JSON.parse(i.args))).toEqual([['/var/lib/spoolship', '/var/spool/spoolship']]);
    // The state volume is the user's and 0700, as the agent would make it at its start (with a WARN, state/dir-trust.ts).
    expect(final('RUN').map((i) => i.args).join(' ')).toContain('chmod 0700 /var/lib/spoolship');
    expect(final('HEALTHCHECK')[0]!.args).toMatch(/CMD \["node", "\/opt\/spoolship\/deploy\/docker\/healthcheck\.mjs"\]$/);
    expect(final('ENTRYPOINT').map((i) => JSON.parse(i.args))).toEqual([['spoolship']]);
    expect(final('CMD').map((i) => JSON.parse(i.args))).toEqual([['run']]);
    expect(final('STOPSIGNAL').map((i) => i.args)).toEqual(['SIGTERM']);
    expect(final('EXPOSE').map((i) => i.args)).toEqual(['9464']);
    expect(final('ENV').map((i) => i.args)).toContain('NODE_ENV=production');
  });

  it('.dockerignore lets in exactly what the COPY lines need', async () => {
    const rules = (await readFile(path.join(ROOT, '.dockerignore'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => ({ negate: l.startsWith('!'), match: picomatch(l.replace(/^!/, '').replace(/\/$/, ''), { dot: true }) }));
    // Docker's rule: the last pattern matching the path or one of its parents decides.
    const excluded = (p: string) => {
      const parts = p.split('/');
      const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
      let out = false;
      for (const r of rules) if (candidates.some((c) => r.match(c))) out = !r.negate;
      return out;
    };
    const sources = dockerfile.ins
      .filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(' ').slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      const files = await walk(path.join(ROOT, src));
      expect(files.length, `${src} exists`).toBeGreaterThan(0);
      for (const f of files) expect(excluded(path.relative(ROOT, f)), `${path.relative(ROOT, f)} is in the build context`).toBe(false);
    }
    for (const p of ['node_modules/yaml/package.json', 'dist/cli.js', 'state/x', 'spool/a/b.ndjson', '.git/HEAD', 'test/fleet/fleet.test.ts', 'deploy/kubernetes/overlays/daemonset/daemonset.yaml', 'src/node_modules/x']) {
      expect(excluded(p), `${p} stays out of the build context`).toBe(true);
    }
  });
});

async function walk(p: string): Promise<string[]> {
  const s = await stat(p).catch(() => null);
  if (!s) return [];
  if (!s.isDirectory()) return [p];
  const out: string[] = [];
  for (const e of await readdir(p)) out.push(...(await walk(path.join(p, e))));
  return out;
}

describe('the runtime stage, replayed without Docker', () => {
  let root: string;
  let emu: Emulator;
  let agent: AgentProcess | null = null;
  const app = () => path.join(root, 'opt', 'spoolship');

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'spoolship-image-'));
    await chmod(root, 0o755); // the image's user must reach /opt/spoolship
    await mkdir(app(), { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) await cp(path.join(ROOT, f), path.join(app(), f));
    // The Dockerfile's production install, as written (minus the cache clean-up, which would empty this host's npm cache).
    const install = final('RUN')[0]!.args.split('&&')[0]!.trim().split(' ');
    execFileSync(install[0]!, install.slice(1), { cwd: app(), stdio: 'pipe', env: { ...process.env, NODE_ENV: 'production' } });
    await cp(path.join(ROOT, 'dist'), path.join(app(), 'dist'), { recursive: true });
    await cp(path.join(ROOT, 'config'), path.join(app(), 'config'), { recursive: true });
    await mkdir(path.join(app(), 'deploy', 'docker'), { recursive: true });
    await cp(path.join(ROOT, 'deploy', 'docker', 'healthcheck.mjs'), path.join(app(), 'deploy', 'docker', 'healthcheck.mjs'));
    await mkdir(path.join(root, 'etc', 'spoolship'), { recursive: true });
    await cp(path.join(ROOT, 'deploy', 'docker', 'spoolship.yaml'), path.join(root, 'etc', 'spoolship', 'spoolship.yaml'));
    for (const d of ['var/lib/spoolship', 'var/spool/spoolship']) {
      await mkdir(path.join(root, d), { recursive: true });
      await chown(path.join(root, d), UID, UID);
    }
    await chmod(path.join(root, 'var', 'lib', 'spoolship'), 0o700);
    await mkdir(path.join(root, 'usr', 'local', 'bin'), { recursive: true });
    await symlink(path.join(app(), 'dist', 'cli.js'), path.join(root, 'usr', 'local', 'bin', 'spoolship'));
    emu = await startEmulator({ listen: '127.0.0.1:0', dataDir: path.join(root, 'emu') });
  }, 120_000);

  afterAll(async () => {
    await agent?.kill();
    await emu?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** The image's environment for the user 10001, with the host paths of the replayed tree. */
  function imageEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      PATH: `${path.join(root, 'usr', 'local', 'bin')}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
      HOME: path.join(root, 'var', 'lib', 'spoolship'),
      NODE_ENV: 'production',
      ...extra,
    };
  }
  const asImageUser = ['--reuid', String(UID), '--regid', String(UID), '--clear-groups', '--'];

  it('installs the dependencies and none of the devDependencies', async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: object; devDependencies: object };
    const installed = async (name: string) => (await stat(path.join(app(), 'node_modules', name, 'package.json')).catch(() => null)) !== null;
    for (const name of Object.keys(pkg.dependencies)) expect(await installed(name), name).toBe(true);
    for (const name of Object.keys(pkg.devDependencies)) expect(await installed(name), name).toBe(false);
  });

  it('`spoolship --version` runs as the non-root user', () => {
    const r = spawnSync('setpriv', [...asImageUser, 'spoolship', '--version'], { env: imageEnv(), cwd: path.join(root, 'var', 'lib', 'spoolship'), encoding: 'utf8' });
    expect(r.error).toBeUndefined();
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(JSON.parse(execFileSync('node', ['-p', 'JSON.stringify(require("./package.json").version)'], { cwd: ROOT, encoding: 'utf8' })));
    expect(r.status).toBe(0);
  });

  it('`spoolship run` ships as the non-root user, passes the HEALTHCHECK, and stops on SIGTERM with exit 0', async () => {
    const stateDir = path.join(root, 'var', 'lib', 'spoolship');
    const spoolDir = path.join(root, 'var', 'spool', 'spoolship');
    // The image's default config, with the volumes at their replayed paths.
    const env = imageEnv({
      SPOOLSHIP_CONFIG: path.join(root, 'etc', 'spoolship', 'spoolship.yaml'),
      SPOOLSHIP_API__BASE_URL: emu.url,
      SPOOLSHIP_TOKEN: emu.token,
      SPOOLSHIP_STATE_DIR: stateDir,
      SPOOLSHIP_SPOOL__DIR: spoolDir,
      SPOOLSHIP_ADMIN__LISTEN: '127.0.0.1:0',
    });
    agent = await AgentProcess.spawn('image', 'setpriv', [...asImageUser, 'spoolship', 'run'], { cwd: stateDir, env });
    const body = lines('docker_smoke', 50);
    await mkdir(path.join(spoolDir, 'docker_smoke'));
    await writeFile(path.join(spoolDir, 'docker_smoke', 'app.ndjson'), `${body.join('\n')}\n`);
    await waitFor(() => (emu.stats().rows['docker_smoke'] ?? 0) >= body.length, 'the lines at the emulator');

    // The HEALTHCHECK finds admin.listen where the agent's own setting puts it (0.0.0.0 asked on loopback).
    const healthcheck = path.join(app(), 'deploy', 'docker', 'healthcheck.mjs');
    const port = new URL(agent.adminUrl!).port;
    const health = spawnSync('setpriv', [...asImageUser, 'node', healthcheck], { env: { ...env, SPOOLSHIP_ADMIN__LISTEN: `0.0.0.0:${port}` } });
    expect(health.status, String(health.stderr)).toBe(0);
    expect(spawnSync('node', [healthcheck, `${agent.adminUrl}/healthz`], { env }).status).toBe(0);
    expect(spawnSync('node', [healthcheck, `${agent.adminUrl}/nope`], { env }).status).toBe(1);
    const off = spawnSync('node', [healthcheck], { env: { ...env, SPOOLSHIP_ADMIN__LISTEN: '' }, encoding: 'utf8' });
    expect(off.status).toBe(1);
    expect(off.stderr).toMatch(/admin\.listen is off/);

    expect(await agent.stop()).toBe(0);
    expect(agent.logs.filter((l) => l.level >= 50)).toEqual([]);
    expect(agent.logs.filter((l) => l.event === 'state_dir_tightened')).toEqual([]);
    const stored = (await readFile(path.join(root, 'emu', 'docker_smoke.ndjson'), 'utf8')).trimEnd().split('\n');
    expect(stored.sort()).toEqual([...body].sort());
    // Everything the agent wrote belongs to the image's user.
    for (const f of await walk(stateDir)) expect((await stat(f)).uid, f).toBe(UID);
  });
});
