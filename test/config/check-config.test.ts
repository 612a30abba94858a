import { chmodSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makeCa, makeClientCert } from '../support/pki.js';
import { ROOT, runCli, tempDir, writeFile } from './helpers.js';

describe('spoolship check-config (built CLI)', () => {
  it('prints all three mistakes as path: value: why and exits 2', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'bad.yaml', 'api:\n  base_url: embedded\n  retries: 3\nspool:\n  start_at: middle\nbatch:\n  max_bytes: 10 parsecs\n');
    const r = runCli(['check-config', '-c', file], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`invalid configuration in ${file} (3 problems)`);
    expect(r.stderr).toContain('api.retries: 3: unknown key;');
    expect(r.stderr).toContain('spool.start_at: "middle": must be one of beginning, end');
    expect(r.stderr).toContain('batch.max_bytes: "10 parsecs": not a size; write bytes (10000000) or a number with KB, MB, GB');
  });

  it('prints the effective config with the token redacted, warnings on stderr, and exits 0', () => {
    const dir = tempDir();
    const token = 'p.eyJ1IjoiZmFrZS10b2tlbi1mb3ItdGVzdHMifQ';
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: https://api.eu.example.com/\nlimits:\n  redis_url: redis://:hunter2@redis:6379\n');
    const r = runCli(['check-config', '-c', file], { cwd: dir, env: { SPOOLSHIP_TOKEN: token, SPOOLSHIP_ADMIN_TOKEN: 'adm1n-s3cret', SPOOLSHIP_BATCH_LINGER: '5' } });
    expect(r.code).toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).not.toContain(token);
    expect(out).not.toContain('adm1n-s3cret');
    expect(out).not.toContain('hunter2');
    expect(r.stdout.split('\n')[0]).toBe(`# spoolship effective configuration, from ${file} (named by -c)`);
    const shown = parse(r.stdout);
    expect(shown.api.token).toBe('***');
    expect(shown.clusters.token).toBe('***');
    expect(shown.api.token_file).toBeNull();
    expect(shown.limits.redis_url).toBe('redis://:***@redis:6379');
    expect(shown.api.base_url).toBe('https://api.eu.example.com');
    expect(shown.batch.max_open_bytes).toBe(67_108_864);
    expect(shown.state_dir).toBe(path.join(dir, 'state'));
    expect(r.stderr).toContain('spoolship check-config: warning: SPOOLSHIP_BATCH_LINGER names no config key');
  });

  it('no API token is a problem (exit 2, as run refuses to start), with every other problem; none is needed for embedded', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: https://api.eu.example.com\nbatch:\n  linger_ms: soon\n');
    const r = runCli(['check-config', '-c', file], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`invalid configuration in ${file} (2 problems)`);
    expect(r.stderr).toContain('api.token: null: no API token: set api.token, api.token_file or the SPOOLSHIP_TOKEN environment variable (not set)');
    expect(r.stderr).toContain('batch.linger_ms: "soon"');
    const embedded = writeFile(dir, 'e.yaml', 'api:\n  base_url: embedded\n');
    expect(runCli(['check-config', '-c', embedded], { cwd: dir }).code).toBe(0);
    const withFile = writeFile(dir, 'f.yaml', `api:\n  base_url: https://api.eu.example.com\n  token_file: ${dir}/token\n`);
    expect(runCli(['check-config', '-c', withFile], { cwd: dir }).code).toBe(0);
  });

  it('warns about an api.token_file other users can read, as run does at start', () => {
    const dir = tempDir();
    const token = writeFile(dir, 'token', 'p.secret\n');
    chmodSync(token, 0o644);
    const file = writeFile(dir, 'c.yaml', `api:\n  base_url: https://api.eu.example.com\n  token_file: ${token}\n`);
    const open = runCli(['check-config', '-c', file], { cwd: dir });
    expect(open.code).toBe(0);
    expect(open.stderr).toContain(`spoolship check-config: warning: ${token}: api.token_file can be read by other users; chmod 600 it`);
    chmodSync(token, 0o600);
    expect(runCli(['check-config', '-c', file], { cwd: dir }).stderr).not.toContain('can be read by other users');
  });

  it('reads the files the config names as run does: an empty token file, one with a control character, or a certificate that does not match its key is exit 2 naming the key; one not there yet a warning', () => {
    const dir = tempDir();
    const token = writeFile(dir, 'token', '\n');
    chmodSync(token, 0o600);
    const file = writeFile(dir, 'c.yaml', `api:\n  base_url: https://api.eu.example.com\n  token_file: ${token}\n`);
    const empty = runCli(['check-config', '-c', file], { cwd: dir });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain(`api.token_file: "${token}": is empty; write the token into it`);
    writeFile(dir, 'token', 'p.tok\u00011\n');
    const control = runCli(['check-config', '-c', file], { cwd: dir });
    expect(control.code).toBe(2);
    expect(control.stderr).toContain(`api.token_file: "${token}": its token contains U+0001 (a control character)`);
    expect(control.stderr).not.toContain('p.tok');
    writeFile(dir, 'token', 'p.tok-1\n');
    expect(runCli(['check-config', '-c', file], { cwd: dir }).code).toBe(0);

    const ca = makeCa(dir, 'ca');
    const a = makeClientCert(dir, ca, 'a');
    const b = makeClientCert(dir, ca, 'b');
    const mtls = writeFile(dir, 'm.yaml', `api:\n  base_url: https://api.eu.example.com\n  token_file: ${token}\n  client_cert_file: ${a.certFile}\n  client_key_file: ${b.keyFile}\n`);
    const mismatched = runCli(['check-config', '-c', mtls], { cwd: dir });
    expect(mismatched.code).toBe(2);
    expect(mismatched.stderr).toContain(`api.client_cert_file: "${a.certFile}"`);
    const notYet = writeFile(dir, 'n.yaml', `api:\n  base_url: https://api.eu.example.com\n  token_file: ${dir}/later\n  client_cert_file: ${dir}/later.crt\n  client_key_file: ${dir}/later.key\n`);
    const later = runCli(['check-config', '-c', notYet], { cwd: dir });
    expect(later.code).toBe(0);
    expect(later.stderr).toContain(`api.token_file: ${dir}/later does not exist (yet)`);
  });

  it('finds ./config/spoolship.yaml from the working directory (the quick start) with no env', () => {
    const r = runCli(['check-config'], { cwd: ROOT });
    expect(r.code).toBe(0);
    // The quick start's ./spool exists once `npm start` has run; until then that is the one warning.
    expect(r.stderr.split('\n').filter((l) => l && !l.includes(`spool.dir ${path.join(ROOT, 'spool')} does not exist`))).toEqual([]);
    expect(r.stdout.split('\n')[0]).toBe(`# spoolship effective configuration, from ${path.join(ROOT, 'config/spoolship.yaml')} (found in the working directory)`);
    expect(parse(r.stdout).api.base_url).toBe('embedded');
  });

  it('uses SPOOLSHIP_CONFIG, and exits 2 when the named file does not exist', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'x.yaml', 'batch:\n  linger_ms: 7\n');
    const ok = runCli(['check-config'], { cwd: dir, env: { SPOOLSHIP_CONFIG: file, SPOOLSHIP_TOKEN: 't', SPOOLSHIP_API__BASE_URL: 'https://api.test' } });
    expect(ok.code).toBe(0);
    expect(parse(ok.stdout).batch.linger_ms).toBe(7);
    const missing = runCli(['check-config', '-c', 'nope.yaml'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`-c: "${path.join(dir, 'nope.yaml')}": no such file`);
  });

  it('has a usage text and rejects unknown flags with exit 2', () => {
    const dir = tempDir();
    const help = runCli(['check-config', '--help'], { cwd: dir });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: spoolship check-config [-c FILE]');
    expect(help.stdout).toContain('SPOOLSHIP_<SECTION>__<KEY>');
    const bad = runCli(['check-config', '--bogus'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("see 'spoolship check-config --help'");
  });
});

describe('check-config keeps credentials in URLs out of its output', () => {
  it('a user:password@ in api.base_url is refused without echoing the password', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: https://alice:s3cr3t-pw@api.eu.example.com\n  token: tok\n');
    const r = runCli(['check-config', '-c', file], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).not.toContain('s3cr3t-pw');
    expect(r.stderr).toContain('api.base_url: "https://alice:***@api.eu.example.com": must not carry credentials');
  });

  it('a secret interpolated into a typed key is *** in problems and in the effective config', () => {
    const dir = tempDir();
    /** check-config on `yaml` with `env` (the secret in one variable): its exit code, and the secret nowhere in its output. */
    const checked = (name: string, yaml: string, env: Record<string, string>, code: number) => {
      const r = runCli(['check-config', '-c', writeFile(dir, name, yaml)], { cwd: dir, env });
      expect(r.code).toBe(code);
      for (const secret of Object.values(env)) expect(r.stdout + r.stderr).not.toContain(secret);
      return r;
    };
    const secret = 'sk-live-9f8e7d6c5b4a';
    const r = checked('bad.yaml', 'api:\n  base_url: embedded\nbatch:\n  linger_ms: ${MY_API_TOKEN}\n', { MY_API_TOKEN: secret }, 2);
    expect(r.stderr).toContain('batch.linger_ms: "***"');
    const r2 = checked('ok.yaml', 'api:\n  base_url: embedded\nclusters:\n  org: org-${DEPLOY_SECRET}\n', { DEPLOY_SECRET: secret }, 0);
    expect(parse(r2.stdout).clusters.org).toBe('org-***');
    // The token's own value, whatever its variable is called, is a secret wherever else it lands.
    const r3 = checked('reused.yaml', 'api:\n  base_url: embedded\n  token: ${MYTOK}\n  wait: ${MYTOK}\nclusters:\n  org: ${MYTOK}\n', { MYTOK: 'p.FROMVAR-1234567' }, 2);
    expect(r3.stderr).toContain('api.wait: "***"');
  });

  it('warns where this release touches an existing setup: a Data Source directory linked outside the spool, a version 1 checkpoint', async () => {
    const dir = tempDir();
    const { mkdirSync, symlinkSync, writeFileSync } = await import('node:fs');
    mkdirSync(path.join(dir, 'elsewhere'));
    writeFileSync(path.join(dir, 'elsewhere', 'a.ndjson'), '{"a":1}\n');
    mkdirSync(path.join(dir, 'spool', 'app'), { recursive: true });
    writeFileSync(path.join(dir, 'spool', 'app', 'fine.ndjson'), '{"b":1}\n');
    symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'spool', 'linked'));
    mkdirSync(path.join(dir, 'state'));
    writeFileSync(path.join(dir, 'state', 'checkpoint.json'), JSON.stringify({ version: 1, journal_seq: 1, prev_journal_seq: 0, next_id: 1, files: [], intents: [] }));
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: https://api.eu.example.com\n  token: t\nspool:\n  dir: ./spool\nstate_dir: ./state\n');
    const r = runCli(['check-config', '-c', file], { cwd: dir });
    expect(r.code).toBe(0);
    const warnings = r.stderr.split('\n').filter((l) => l.startsWith('spoolship check-config: warning: '));
    expect(warnings).toContainEqual(expect.stringContaining(`${path.join(dir, 'spool', 'linked')} is a symlink to ${path.join(dir, 'elsewhere')} that run will not read (spool.follow_symlinks: inside`));
    expect(warnings).toContainEqual(expect.stringContaining('holds a checkpoint in the previous format (version 1)'));
    expect(warnings.filter((w) => w.includes('symlink'))).toHaveLength(1);

    // With follow_symlinks: any, the link is read as before: no warning about it.
    const any = writeFile(dir, 'any.yaml', 'api:\n  base_url: https://api.eu.example.com\n  token: t\nspool:\n  dir: ./spool\n  follow_symlinks: any\nstate_dir: ./state\n');
    expect(runCli(['check-config', '-c', any], { cwd: dir }).stderr).not.toContain('is a symlink');
  });

  it('a file where state_dir should be: check-config exits 2 naming state_dir, as run does; queue list, dead-letter list and help name the path, not a stack', () => {
    const dir = tempDir();
    writeFile(dir, 'a-file', 'x\n');
    const file = writeFile(dir, 'c.yaml', `api:\n  base_url: embedded\nstate_dir: ${path.join(dir, 'a-file', 'state')}\nspool:\n  dir: ${dir}\nadmin:\n  listen: ""\n`);
    const check = runCli(['check-config', '-c', file], { cwd: dir });
    expect(check.code).toBe(2);
    expect(check.stderr).toContain(`state_dir: "${path.join(dir, 'a-file', 'state')}": cannot be made a directory (ENOTDIR: a file is in the way)`);
    const run = runCli(['run', '-c', file], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('state_dir: ');
    for (const cmd of [['queue', 'list'], ['dead-letter', 'list']]) {
      const r = runCli([...cmd, '-c', file], { cwd: dir });
      expect(r.code, cmd.join(' ')).toBe(1);
      expect(r.stderr, cmd.join(' ')).toMatch(new RegExp(`^spoolship ${cmd[0]}: cannot \\w+ ${path.join(dir, 'a-file')}\\S* \\(ENOTDIR\\); check that path in the config \\(state_dir`));
      expect(r.stderr, cmd.join(' ')).not.toContain('    at ');
    }
    // A directory where state_dir is, in the right place: no problem.
    const ok = writeFile(dir, 'ok.yaml', `api:\n  base_url: embedded\nstate_dir: ${path.join(dir, 'new', 'state')}\nspool:\n  dir: ${dir}\n`);
    expect(runCli(['check-config', '-c', ok], { cwd: dir }).code).toBe(0);
    expect(runCli(['help', 'run'], { cwd: dir }).stdout).toMatch(/^Usage: spoolship run /);
  });
});
