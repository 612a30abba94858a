// deploy/systemd: the unit passes `systemd-analyze verify` with no warning,
// its hardening scores well in `systemd-analyze security --offline`, it has
// the properties docs/deployment.md promises, and the sysusers/tmpfiles
// snippets create the user and the spool in a scratch root. (Debian's
// `systemd` package; .ci/run installs it when missing.)
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { ROOT } from '../fleet/agents.js';

const UNIT = path.join(ROOT, 'deploy', 'systemd', 'spoolship.service');
const SYSUSERS = path.join(ROOT, 'deploy', 'systemd', 'spoolship.sysusers');
const TMPFILES = path.join(ROOT, 'deploy', 'systemd', 'spoolship.tmpfiles');

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function scratch(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'spoolship-systemd-'));
  dirs.push(d);
  return d;
}

function run(cmd: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, SYSTEMD_LOG_COLOR: '0', SYSTEMD_PAGER: '' } });
  if (r.error) throw new Error(`${cmd} not runnable (${r.error.message}); install Debian's systemd package (.ci/run does)`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** [Section] -> key -> values (a key may repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const m = /^\[(.+)\]$/.exec(line);
    if (m) {
      section = m[1]!;
      out.set(section, new Map());
      continue;
    }
    const i = line.indexOf('=');
    const key = line.slice(0, i);
    const sec = out.get(section)!;
    sec.set(key, [...(sec.get(key) ?? []), line.slice(i + 1)]);
  }
  return out;
}

/** The unit with ExecStart pointing at this checkout's CLI, since verify checks that the binary exists. */
async function unitForThisHost(name = 'spoolship.service', edit: (t: string) => string = (t) => t): Promise<string> {
  const d = await scratch();
  const text = (await readFile(UNIT, 'utf8')).replace('ExecStart=/usr/local/bin/spoolship ', `ExecStart=${path.join(ROOT, 'dist', 'cli.js')} `);
  const file = path.join(d, name);
  await writeFile(file, edit(text));
  return file;
}

describe('deploy/systemd/spoolship.service', () => {
  it('passes systemd-analyze verify without a warning', async () => {
    const r = run('systemd-analyze', ['verify', '--man=no', await unitForThisHost()]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('systemd-analyze verify would catch a broken unit (the check above can fail)', async () => {
    const r = run('systemd-analyze', ['verify', '--man=no', await unitForThisHost('broken.service', (t) => t.replace('KillSignal=SIGTERM', 'KillSignal=SIGTREM'))]);
    expect(r.stderr).toMatch(/SIGTREM/);
  });

  it('is hardened: systemd-analyze security rates its exposure at most 2.5 of 10', async () => {
    const r = run('systemd-analyze', ['security', '--offline=yes', '--no-pager', await unitForThisHost()]);
    const m = /Overall exposure level for spoolship\.service: (\d+(?:\.\d+)?)/.exec(r.stdout);
    expect(m, r.stdout.slice(-500)).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(2.5);
  });

  it('restarts always, runs as a dedicated user with a state directory, and stops within the drain', async () => {
    const unit = parseUnit(await readFile(UNIT, 'utf8'));
    const svc = unit.get('Service')!;
    const one = (k: string) => svc.get(k)?.at(-1);
    expect(one('Restart')).toBe('always');
    expect(one('User')).toBe('spoolship');
    expect(one('StateDirectory')).toBe('spoolship');
    // The agent makes a looser state_dir 0700 at every start, with a WARN (state/dir-trust.ts).
    expect(one('StateDirectoryMode')).toBe('0700');
    expect(svc.get('Environment')).toContain('SPOOLSHIP_STATE_DIR=%S/spoolship');
    expect(one('ProtectSystem')).toBe('strict');
    expect(one('NoNewPrivileges')).toBe('yes');
    expect(one('ReadWritePaths')).toBe('/var/spool/spoolship');
    expect(one('KillSignal')).toBe('SIGTERM');
    expect(one('ExecStart')).toBe('/usr/local/bin/spoolship run -c /etc/spoolship/spoolship.yaml');
    const stopSec = Number(/^(\d+)s$/.exec(one('TimeoutStopSec') ?? '')?.[1]);
    expect(stopSec * 1000).toBeGreaterThan(DEFAULTS.shutdown_timeout_ms + 5000);
    expect(unit.get('Install')!.get('WantedBy')).toEqual(['multi-user.target']);
  });

  it('sysusers and tmpfiles create the user, the group-writable spool and /etc/spoolship in a scratch root', async () => {
    const root = await scratch();
    await mkdir(path.join(root, 'etc'));
    for (const f of ['passwd', 'group', 'shadow', 'gshadow']) await writeFile(path.join(root, 'etc', f), '');
    const users = run('systemd-sysusers', [`--root=${root}`, SYSUSERS]);
    expect(users.status, users.stderr).toBe(0);
    expect(await readFile(path.join(root, 'etc', 'passwd'), 'utf8')).toMatch(/^spoolship:x:\d+:\d+:.*:\/var\/lib\/spoolship:\/usr\/sbin\/nologin$/m);
    const tmp = run('systemd-tmpfiles', [`--root=${root}`, '--create', TMPFILES]);
    expect(tmp.status, tmp.stderr).toBe(0);
    const spool = await stat(path.join(root, 'var', 'spool', 'spoolship'));
    expect(spool.mode & 0o7777).toBe(0o2770);
  });
});
