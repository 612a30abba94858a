import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { load, ROOT, tempDir } from './helpers.js';

describe('the config files shipped in config/', () => {
  it('config/spoolship.yaml (quick start) loads with no environment at all', () => {
    const cwd = tempDir();
    const loaded = load({ file: path.join(ROOT, 'config/spoolship.yaml'), cwd, env: {} });
    expect(loaded.warnings).toEqual([]);
    const c = loaded.config;
    expect(c.api.base_url).toBe('embedded');
    expect(c.api.token).toBeNull();
    expect(c.spool.dir).toBe(path.join(cwd, 'spool'));
    expect(c.state_dir).toBe(path.join(cwd, 'state'));
    expect(c.batch.linger_ms).toBeLessThanOrEqual(500);
    expect(c.admin.listen).toBe('127.0.0.1:9464');
    expect(c.log.format).toBe('pretty');
  });

  it('config/spoolship.yaml is what `./config/spoolship.yaml` lookup finds from the repository root', () => {
    const loaded = load({ cwd: ROOT, env: {} });
    expect(loaded.file).toBe(path.join(ROOT, 'config/spoolship.yaml'));
    expect(loaded.source).toBe('cwd');
  });

  it('config/production.example.yaml loads with its variables set', () => {
    const cwd = tempDir();
    const env = { API_BASE_URL: 'https://api.eu.example.com', SPOOLSHIP_ADMIN_TOKEN: 'admin-secret', ORG_ID: 'org-1' };
    const loaded = load({ file: path.join(ROOT, 'config/production.example.yaml'), cwd, env });
    const c = loaded.config;
    expect(c.api.base_url).toBe('https://api.eu.example.com');
    expect(c.api.token).toBeNull();
    expect(c.api.token_file).toBe('/run/secrets/spoolship/token');
    expect(c.api.http2).toBe(true);
    expect(c.compression.codec).toBe('zstd');
    expect(c.limits.redis_url).toBeNull();
    expect(c.limits.budget_id).toBeNull();
    expect(c.spool.sources.map((s) => s.datasource)).toEqual(['app_events', 'nginx_access']);
    expect(c.queue.max_bytes).toBe(4 * 2 ** 30);
    expect(c.clusters).toEqual({ org: 'org-1', token: 'admin-secret' });
    // The token file is mounted at run time; its absence is only a warning here.
    expect(loaded.warnings).toEqual(['api.token_file: /run/secrets/spoolship/token does not exist (yet); the agent reads it at start-up and on SIGHUP']);
  });
});
