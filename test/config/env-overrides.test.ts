import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { envNameFor } from '../../src/config/index.js';
import { load, problemsOf, tempDir, writeFile } from './helpers.js';

describe('SPOOLSHIP_* environment overrides', () => {
  it('maps key paths to variable names', () => {
    expect(envNameFor('api.base_url')).toBe('SPOOLSHIP_API__BASE_URL');
    expect(envNameFor('batch.linger_ms')).toBe('SPOOLSHIP_BATCH__LINGER_MS');
    expect(envNameFor('state_dir')).toBe('SPOOLSHIP_STATE_DIR');
  });

  it('override nested and top-level keys, and win over the file', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: https://file.example.com\nbatch:\n  linger_ms: 5000\nstate_dir: /from/file\n');
    const { config } = load({
      file,
      cwd: dir,
      env: { SPOOLSHIP_API__BASE_URL: 'https://env.example.com/', SPOOLSHIP_BATCH__LINGER_MS: '250', SPOOLSHIP_STATE_DIR: '/from/env' },
    });
    expect(config.api.base_url).toBe('https://env.example.com');
    expect(config.batch.linger_ms).toBe(250);
    expect(config.state_dir).toBe('/from/env');
  });

  it('read values as YAML: booleans, numbers, sizes, null, lists', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  ca_file: /etc/ca.pem\n');
    const { config } = load({
      file,
      cwd: dir,
      env: {
        SPOOLSHIP_API__WAIT: 'false',
        SPOOLSHIP_COMPRESSION__LEVEL: '9',
        SPOOLSHIP_QUEUE__MAX_BYTES: '2GiB',
        SPOOLSHIP_API__CA_FILE: 'null',
        SPOOLSHIP_RETRY__MULTIPLIER: '1.5',
        SPOOLSHIP_SPOOL__SOURCES: '[{include: [logs/*.ndjson, /abs/x.ndjson], datasource: app}]',
      },
    });
    expect(config.api.wait).toBe(false);
    expect(config.compression.level).toBe(9);
    expect(config.queue.max_bytes).toBe(2 * 2 ** 30);
    expect(config.api.ca_file).toBeNull();
    expect(config.retry.multiplier).toBe(1.5);
    expect(config.spool.sources).toEqual([{ include: [path.join(dir, 'logs/*.ndjson'), '/abs/x.ndjson'], datasource: 'app' }]);
  });

  it('an empty value is "": null for optional strings, "disabled" for admin.listen', () => {
    const dir = tempDir();
    const { config } = load({ cwd: dir, env: { SPOOLSHIP_ADMIN__LISTEN: '', SPOOLSHIP_LIMITS__BUDGET_ID: '' } });
    expect(config.admin.listen).toBe('');
    expect(config.limits.budget_id).toBeNull();
  });

  it('read a quoted value as the YAML string it is: the quotes are not part of it', () => {
    const dir = tempDir();
    const { config } = load({
      cwd: dir,
      env: { SPOOLSHIP_LOG__LEVEL: '"debug"', SPOOLSHIP_ADMIN__LISTEN: '""', SPOOLSHIP_LIMITS__BUDGET_ID: "'team a'", SPOOLSHIP_CLUSTERS__ORG: '"12345"' },
    });
    expect(config.log.level).toBe('debug');
    expect(config.admin.listen).toBe('');
    expect(config.limits.budget_id).toBe('team a');
    expect(config.clusters.org).toBe('12345');
  });

  it('keep plain text verbatim: a token is not cut at " #"', () => {
    const dir = tempDir();
    const { config } = load({ cwd: dir, env: { SPOOLSHIP_API__TOKEN: 'abc #1' } });
    expect(config.api.token).toBe('abc #1');
  });

  it('keep the text of string keys that YAML would read as numbers', () => {
    const dir = tempDir();
    const { config } = load({ cwd: dir, env: { SPOOLSHIP_API__TOKEN: '00123', SPOOLSHIP_CLUSTERS__ORG: '1e3' } });
    expect(config.api.token).toBe('00123');
    expect(config.clusters.org).toBe('1e3');
  });

  it('a bad override value is a problem naming the variable', () => {
    const dir = tempDir();
    const { lines } = problemsOf(() => load({ cwd: dir, env: { SPOOLSHIP_BATCH__LINGER_MS: 'soon', SPOOLSHIP_LOG__LEVEL: 'loud' } }));
    expect(lines).toEqual([
      'batch.linger_ms: "soon": expected a duration: a whole number of milliseconds, e.g. 1000 (set by SPOOLSHIP_BATCH__LINGER_MS)',
      'log.level: "loud": must be one of trace, debug, info, warn, error, fatal, silent (set by SPOOLSHIP_LOG__LEVEL)',
    ]);
  });

  it('reserved names are not key paths: SPOOLSHIP_TOKEN and SPOOLSHIP_ADMIN_TOKEN are the token defaults', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: embedded\n');
    const loaded = load({ file, cwd: dir, env: { SPOOLSHIP_TOKEN: 'tok', SPOOLSHIP_ADMIN_TOKEN: 'adm', SPOOLSHIP_CONFIG: '' } });
    expect(loaded.config.api.token).toBe('tok');
    expect(loaded.config.clusters.token).toBe('adm');
    expect(loaded.warnings).toEqual([]);
  });

  it('the file and SPOOLSHIP_API__TOKEN win over SPOOLSHIP_TOKEN; an empty token is null', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  token: from-file\nclusters:\n  token: ""\n');
    expect(load({ file, cwd: dir, env: { SPOOLSHIP_TOKEN: 'tok' } }).config.api.token).toBe('from-file');
    expect(load({ file, cwd: dir, env: { SPOOLSHIP_TOKEN: 'tok', SPOOLSHIP_API__TOKEN: 'over' } }).config.api.token).toBe('over');
    expect(load({ file, cwd: dir, env: { SPOOLSHIP_ADMIN_TOKEN: 'adm' } }).config.clusters.token).toBeNull();
  });

  it('SPOOLSHIP_TOKEN does not collide with api.token_file', () => {
    const dir = tempDir();
    const tokenFile = writeFile(dir, 'token', 'secret\n');
    const file = writeFile(dir, 'c.yaml', `api:\n  token_file: ${tokenFile}\n`);
    const loaded = load({ file, cwd: dir, env: { SPOOLSHIP_TOKEN: 'tok' } });
    expect(loaded.config.api.token).toBeNull();
    expect(loaded.config.api.token_file).toBe(tokenFile);
    expect(loaded.warnings).toContain('SPOOLSHIP_TOKEN is set but api.token_file is used; unset one of them to avoid confusion');
  });

  it('an unknown SPOOLSHIP_* variable is a warning, with a did-you-mean hint when close', () => {
    const dir = tempDir();
    const seen: string[] = [];
    const loaded = load({
      cwd: dir,
      env: { SPOOLSHIP_BATCH_LINGER_MS: '5', SPOOLSHIP_TOTALLY_UNRELATED_THING: 'x', SPOOLSHIP_LIMITS: '{}' },
      onWarning: (w) => seen.push(w),
    });
    expect(loaded.config.batch.linger_ms).toBe(1000);
    expect(loaded.warnings).toContain('SPOOLSHIP_BATCH_LINGER_MS names no config key; it is ignored. Did you mean SPOOLSHIP_BATCH__LINGER_MS?');
    expect(loaded.warnings.some((w) => w.startsWith('SPOOLSHIP_TOTALLY_UNRELATED_THING names no config key; it is ignored'))).toBe(true);
    expect(loaded.warnings.some((w) => w.startsWith('SPOOLSHIP_LIMITS names the section limits, not a key'))).toBe(true);
    expect(seen).toEqual(loaded.warnings);
  });

  it('a SPOOLSHIP_* variable used by ${VAR} in the file is not reported as unknown', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'limits:\n  budget_id: ${SPOOLSHIP_BUDGET:-x}\n');
    const loaded = load({ file, cwd: dir, env: { SPOOLSHIP_BUDGET: 'team-a' } });
    expect(loaded.config.limits.budget_id).toBe('team-a');
    expect(loaded.warnings.filter((w) => w.includes('SPOOLSHIP_BUDGET'))).toEqual([]);
  });

  it('warnings reach onWarning even when the config is rejected', () => {
    const dir = tempDir();
    const seen: string[] = [];
    problemsOf(() => load({ cwd: dir, env: { SPOOLSHIP_BATCH_LINGER_MS: '5', SPOOLSHIP_LOG__LEVEL: 'loud' }, onWarning: (w) => seen.push(w) }));
    expect(seen.some((w) => w.includes('Did you mean SPOOLSHIP_BATCH__LINGER_MS?'))).toBe(true);
  });
});
