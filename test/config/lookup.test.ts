import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { load, problemsOf, tempDir, writeFile } from './helpers.js';

const yaml = (dir: string) => `state_dir: ${dir}\n`;

describe('config file lookup', () => {
  it('-c wins over SPOOLSHIP_CONFIG and ./config/spoolship.yaml, and resolves against cwd', () => {
    const dir = tempDir();
    writeFile(dir, 'flag.yaml', yaml('/from/flag'));
    const envFile = writeFile(dir, 'env.yaml', yaml('/from/env'));
    writeFile(dir, 'config/spoolship.yaml', yaml('/from/cwd'));
    const loaded = load({ file: 'flag.yaml', cwd: dir, env: { SPOOLSHIP_CONFIG: envFile } });
    expect(loaded.config.state_dir).toBe('/from/flag');
    expect(loaded.file).toBe(path.join(dir, 'flag.yaml'));
    expect(loaded.source).toBe('flag');
  });

  it('SPOOLSHIP_CONFIG wins over ./config/spoolship.yaml', () => {
    const dir = tempDir();
    const envFile = writeFile(dir, 'env.yaml', yaml('/from/env'));
    writeFile(dir, 'config/spoolship.yaml', yaml('/from/cwd'));
    const loaded = load({ cwd: dir, env: { SPOOLSHIP_CONFIG: envFile } });
    expect(loaded.config.state_dir).toBe('/from/env');
    expect(loaded.source).toBe('env');
  });

  it('./config/spoolship.yaml wins over the system file', () => {
    const dir = tempDir();
    const cwdFile = writeFile(dir, 'config/spoolship.yaml', yaml('/from/cwd'));
    const systemFile = writeFile(dir, 'etc/spoolship.yaml', yaml('/from/etc'));
    const loaded = load({ cwd: dir, systemFile });
    expect(loaded.config.state_dir).toBe('/from/cwd');
    expect(loaded.file).toBe(cwdFile);
    expect(loaded.source).toBe('cwd');
  });

  it('falls back to the system file (/etc/spoolship/spoolship.yaml, injectable)', () => {
    const dir = tempDir();
    const systemFile = writeFile(dir, 'etc/spoolship.yaml', yaml('/from/etc'));
    const loaded = load({ cwd: dir, systemFile });
    expect(loaded.config.state_dir).toBe('/from/etc');
    expect(loaded.file).toBe(systemFile);
    expect(loaded.source).toBe('system');
    expect(loaded.searched).toEqual([path.join(dir, 'config/spoolship.yaml'), systemFile]);
  });

  it('with no file anywhere: defaults + env overrides, and a warning naming where it looked', () => {
    const dir = tempDir();
    const systemFile = path.join(dir, 'etc/spoolship.yaml');
    const loaded = load({ cwd: dir, systemFile, env: { SPOOLSHIP_BATCH__LINGER_MS: '42' } });
    expect(loaded.file).toBeNull();
    expect(loaded.source).toBe('none');
    expect(loaded.config.batch.linger_ms).toBe(42);
    expect(loaded.config.state_dir).toBe(path.join(dir, 'state'));
    expect(loaded.warnings[0]).toBe(
      `no config file found (looked for ${path.join(dir, 'config/spoolship.yaml')}, ${systemFile}); using the defaults and SPOOLSHIP_* variables`,
    );
  });

  it('an explicitly named file that does not exist is an error, not a fallback', () => {
    const dir = tempDir();
    writeFile(dir, 'config/spoolship.yaml', yaml('/from/cwd'));
    const viaFlag = problemsOf(() => load({ file: 'missing.yaml', cwd: dir }));
    expect(viaFlag.lines).toEqual([`-c: "${path.join(dir, 'missing.yaml')}": no such file; check the path (relative paths start at the working directory)`]);
    const viaEnv = problemsOf(() => load({ cwd: dir, env: { SPOOLSHIP_CONFIG: '/nope/x.yaml' } }));
    expect(viaEnv.lines).toEqual(['SPOOLSHIP_CONFIG: "/nope/x.yaml": no such file; check the path (relative paths start at the working directory)']);
    const aDir = problemsOf(() => load({ file: 'config', cwd: dir }));
    expect(aDir.lines[0]).toContain('is a directory');
  });

  it('an empty file means all defaults', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'empty.yaml', '# nothing yet\n');
    const loaded = load({ file, cwd: dir });
    expect(loaded.config.batch.max_bytes).toBe(10_000_000);
    expect(loaded.file).toBe(file);
  });

  it('a YAML syntax error is located file:line:col', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'bad.yaml', 'api:\n  base_url: embedded\n  wait: [true\n');
    const { lines } = problemsOf(() => load({ file, cwd: dir }));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines[0]).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: .*fix the YAML syntax`));
  });

  it.each([
    ['a duplicated token', 'api:\n  base_url: embedded\n  token: p.FIRSTSECRET1\n  token: p.SECONDSECRET2\n'],
    ['a tab before a token', 'api:\n  base_url: embedded\n\ttoken: p.SECONDSECRET2\n'],
    ['a duplicated redis_url with a password', 'limits:\n  redis_url: redis://u:SECONDSECRET2@h:6379\n  redis_url: redis://u:SECONDSECRET2@h:6379\n'],
    ['a duplicated proxy with a query password', 'api:\n  proxy: http://p:3128/?password=SECONDSECRET2\n  proxy: http://p:3128/?password=SECONDSECRET2\n'],
  ])('a YAML syntax error on a line with a secret (%s) names the line without the secret', (_what, text) => {
    const dir = tempDir();
    const file = writeFile(dir, 'bad.yaml', text);
    const { lines } = problemsOf(() => load({ file, cwd: dir }));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).toMatch(/fix the YAML syntax/);
    expect(lines.join('\n')).not.toContain('SECONDSECRET2');
    expect(lines.join('\n')).toContain('***');
  });
});
