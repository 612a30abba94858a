import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, redactConfig, resolveConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';
import { load, problemsOf, tempDir, writeFile } from './helpers.js';

function loadYaml(text: string, env: Record<string, string> = {}) {
  const dir = tempDir();
  const file = writeFile(dir, 'c.yaml', text);
  return { dir, file, run: (opts: { tokenRequired?: boolean } = {}) => load({ file, cwd: dir, env, ...opts }) };
}

describe('validation', () => {
  it('collects every problem at once, as path: value: why', () => {
    const { run } = loadYaml(
      [
        'api:',
        '  tokn: x',
        '  wait: yes',
        'spool:',
        '  start_at: middle',
        'batch:',
        '  max_bytes: 200MB',
        '  linger_ms: 5s',
        'linger_ms: 3',
        'limits:',
        '  max_connections: 300',
        '  redis_url: http://redis:6379',
        'admin:',
        '  listen: nope',
      ].join('\n'),
    );
    const { error, lines } = problemsOf(run);
    expect(error.code).toBe('SPOOLSHIP_ERR_CONFIG');
    expect(error.exitCode).toBe(2);
    expect(lines).toEqual([
      'linger_ms: 3: unknown key here; did you mean batch.linger_ms?',
      'api.tokn: "***": unknown key; did you mean api.token?',
      'api.wait: "yes": expected true or false (YAML 1.2 reads yes/no/on/off as strings)',
      'spool.start_at: "middle": must be one of beginning, end',
      "batch.max_bytes: \"200MB\": must be at most 100MB (100000000 bytes), the Events API's request limit on paid plans (10MB on others)",
      'batch.linger_ms: "5s": durations are integers in milliseconds: write 5000',
      'limits.max_connections: 300: must be at most 250 (the platform allows 250 connections per IP address)',
      'limits.redis_url: "http://redis:6379": must start with redis:// or rediss:// (TLS)',
      'admin.listen: "nope": must be host:port (127.0.0.1:9464, 0.0.0.0:9464, [::1]:9464), or "" to disable the admin server',
    ]);
  });

  it('a number too large for a double (1e400) is refused and shown as what it became, not as null', () => {
    const { run } = loadYaml(['api:', '  timeout_ms: 1e400'].join('\n'));
    const lines = problemsOf(run).lines.filter((l) => l.startsWith('api.timeout_ms'));
    expect(lines).toEqual([expect.stringMatching(/^api\.timeout_ms: Infinity: /)]);
  });

  it('an unknown key is one problem, even when its value uses an unset ${VAR}', () => {
    const { lines } = problemsOf(loadYaml('api:\n  tokne: ${SPOOLSHIP_TOKEN}\n').run);
    expect(lines).toEqual(['api.tokne: "${SPOOLSHIP_TOKEN}": unknown key; did you mean api.token?']);
  });

  it('does not echo the value of a misspelt secret key', () => {
    const { lines } = problemsOf(loadYaml('api:\n  tokne: s3cr3t-value\n').run);
    expect(lines).toEqual(['api.tokne: "***": unknown key; did you mean api.token?']);
  });

  it('checks every enum', () => {
    const { run } = loadYaml('spool:\n  on_complete: trash\nvalidate: yes\ncompression:\n  codec: lz4\nlog:\n  level: verbose\n  format: xml\n');
    const paths = problemsOf(run).lines.map((l) => l.split(':')[0]);
    expect(paths).toEqual(['spool.on_complete', 'validate', 'compression.codec', 'log.level', 'log.format']);
  });

  it('reads sizes in both unit families and enforces the batch limits', () => {
    const { run } = loadYaml('batch:\n  max_bytes: 100MB\n  max_open_bytes: 1GiB\nqueue:\n  max_bytes: 2147483648\nspool:\n  max_line_bytes: 512KiB\n');
    const { config } = run();
    expect(config.batch.max_bytes).toBe(100_000_000);
    expect(config.batch.max_open_bytes).toBe(2 ** 30);
    expect(config.queue.max_bytes).toBe(2 ** 31);
    expect(config.spool.max_line_bytes).toBe(512 * 1024);
    expect(problemsOf(loadYaml('batch:\n  max_bytes: 100MiB\n').run).lines[0]).toMatch(/^batch.max_bytes: "100MiB": must be at most 100MB/);
    expect(problemsOf(loadYaml('batch:\n  max_bytes: 999\n').run).lines[0]).toBe('batch.max_bytes: 999: must be at least 1KB (1000 bytes)');
    expect(problemsOf(loadYaml('dead_letter:\n  max_bytes: 0\n').run).lines[0]).toBe('dead_letter.max_bytes: 0: must be a positive size');
    expect(problemsOf(loadYaml('queue:\n  max_bytes: lots\n').run).lines[0]).toMatch(/^queue.max_bytes: "lots": not a size; write bytes/);
  });

  it('checks durations: integers in ms, >= 0 for linger and shutdown, > 0 elsewhere', () => {
    expect(loadYaml('batch:\n  linger_ms: 0\nshutdown_timeout_ms: 0\n').run().config.batch.linger_ms).toBe(0);
    const { lines } = problemsOf(loadYaml('api:\n  timeout_ms: 0\nretry:\n  initial_ms: -5\n  max_ms: 1.5\nspool:\n  idle_ms: 3000000000\n').run);
    expect(lines).toEqual([
      'api.timeout_ms: 0: must be > 0 milliseconds',
      'spool.idle_ms: 3000000000: must be at most 2147483647 ms (~24.8 days, the limit of Node\'s timers)',
      'retry.initial_ms: -5: must be > 0 milliseconds',
      'retry.max_ms: 1.5: a duration is a whole number of milliseconds',
    ]);
  });

  it('checks rules between keys', () => {
    const { lines } = problemsOf(
      loadYaml(
        'batch:\n  max_bytes: 10MB\n  max_open_bytes: 5MB\nqueue:\n  max_bytes: 1MB\nretry:\n  initial_ms: 5000\n  max_ms: 1000\n  multiplier: 0.5\ncompression:\n  codec: gzip\n  level: 12\napi:\n  base_url: http://localhost:7181\n  http2: true\n',
      ).run,
    );
    expect(lines).toEqual([
      'retry.multiplier: 0.5: must be >= 1',
      'batch.max_open_bytes: 5000000: must be >= batch.max_bytes (10MB): open batches must fit at least one full batch',
      'queue.max_bytes: 1000000: must be >= batch.max_bytes (10MB): the retry queue must hold at least one batch',
      'retry.initial_ms: 5000: must be <= retry.max_ms (1000)',
      'compression.level: 12: must be 0..9 for gzip',
      'api.http2: true: HTTP/2 needs TLS (ALPN): use an https:// api.base_url, or set http2: false',
    ]);
  });

  it('compression.level follows the codec range', () => {
    expect(loadYaml('compression:\n  codec: zstd\n  level: 19\n').run().config.compression.level).toBe(19);
    expect(problemsOf(loadYaml('compression:\n  codec: zstd\n  level: 0\n').run).lines).toEqual(['compression.level: 0: must be 1..22 for zstd']);
  });

  it('api.token and api.token_file together are a problem, and the token is not echoed', () => {
    const { lines } = problemsOf(loadYaml('api:\n  token: s3cr3t-value\n  token_file: /run/token\n').run);
    expect(lines).toEqual(['api.token_file: "/run/token": api.token is set too; set only one: token_file (re-read on SIGHUP and when it changes) or token']);
    expect(lines.join('\n')).not.toContain('s3cr3t-value');
  });

  it('normalizes api.base_url and refuses non-http URLs', () => {
    expect(loadYaml('api:\n  base_url: https://api.eu.example.com//\n').run().config.api.base_url).toBe('https://api.eu.example.com');
    expect(loadYaml('api:\n  base_url: embedded\n').run().config.api.base_url).toBe('embedded');
    expect(problemsOf(loadYaml('api:\n  base_url: ftp://x\n').run).lines).toEqual(['api.base_url: "ftp://x": must start with https:// or http://, or be "embedded"']);
    expect(problemsOf(loadYaml('api:\n  base_url: api.example.com\n').run).lines[0]).toMatch(/^api.base_url: "api.example.com": must be an http\(s\) URL/);
  });

  it('accepts admin.listen host:port, [v6]:port and "" (disabled)', () => {
    expect(loadYaml('admin:\n  listen: ""\n').run().config.admin.listen).toBe('');
    expect(loadYaml('admin:\n  listen: "[::1]:9464"\n').run().config.admin.listen).toBe('[::1]:9464');
    expect(loadYaml('admin:\n  listen: 0.0.0.0:0\n').run().config.admin.listen).toBe('0.0.0.0:0');
    expect(problemsOf(loadYaml('admin:\n  listen: 127.0.0.1:70000\n').run).lines[0]).toMatch(/^admin.listen: "127.0.0.1:70000": must be host:port/);
  });

  it('limits are positive integers', () => {
    const { lines } = problemsOf(loadYaml('limits:\n  requests_per_second: 0.5\n  max_in_flight: 0\n  fallback_requests_per_second: -1\n').run);
    expect(lines).toEqual([
      'limits.requests_per_second: 0.5: expected a positive integer',
      'limits.max_in_flight: 0: expected auto (adaptive, the default) or a positive integer',
      'limits.fallback_requests_per_second: -1: must be a positive integer',
    ]);
  });

  it('validates spool.sources entries, each problem at its own path', () => {
    const { lines } = problemsOf(
      loadYaml('spool:\n  sources:\n    - include: ["a/*.ndjson"]\n      datasource: ok_name\n    - include: []\n      datasource: 9bad\n      extra: 1\n    - nope\n').run,
    );
    expect(lines).toEqual([
      'spool.sources[1].extra: 1: unknown key; a source has only include and datasource',
      'spool.sources[1].datasource: "9bad": must be a Data Source name: letters, digits and _, not starting with a digit, at most 255 characters',
      'spool.sources[1].include: []: must be a non-empty list of globs, e.g. ["/var/log/app/*.ndjson"]',
      'spool.sources[2]: "nope": expected a mapping { include: [glob, ...], datasource: NAME }',
    ]);
  });

  it('resolves relative paths: dirs and files against cwd, source globs against the config file directory', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'etc/c.yaml', 'spool:\n  dir: data/spool\n  sources:\n    - include: [logs/*.ndjson, /abs/*.ndjson]\n      datasource: app\nstate_dir: ./st\napi:\n  ca_file: certs/ca.pem\n  token_file: tok\n');
    const cwd = path.join(dir, 'work');
    const { config, warnings } = load({ file, cwd });
    expect(config.spool.dir).toBe(path.join(cwd, 'data/spool'));
    expect(config.state_dir).toBe(path.join(cwd, 'st'));
    expect(config.api.ca_file).toBe(path.join(cwd, 'certs/ca.pem'));
    expect(config.api.token_file).toBe(path.join(cwd, 'tok'));
    expect(config.spool.sources).toEqual([{ include: [path.join(dir, 'etc/logs/*.ndjson'), '/abs/*.ndjson'], datasource: 'app' }]);
    expect(warnings).toContain(`api.token_file: ${path.join(cwd, 'tok')} does not exist (yet); the agent reads it at start-up and on SIGHUP`);
  });

  it('a missing limits.redis_ca_file is a warning, as a missing api.ca_file is (run refuses it: exit 2)', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  token: abc\nlimits:\n  redis_url: rediss://127.0.0.1:1\n  redis_ca_file: redis-ca.pem\n');
    const { warnings } = load({ file, cwd: dir });
    expect(warnings).toContain(`limits.redis_ca_file: ${path.join(dir, 'redis-ca.pem')} does not exist (yet); the agent reads it at start-up and on SIGHUP`);
  });

  it('a section that is not a mapping is one problem; an empty section means defaults', () => {
    const { lines } = problemsOf(loadYaml('api: embedded\n').run);
    expect(lines).toEqual(['api: "embedded": expected a mapping with keys base_url, token, token_file, wait, http2, ca_file, client_cert_file, client_key_file, proxy, timeout_ms']);
    expect(loadYaml('batch:\n').run().config.batch).toEqual(DEFAULTS.batch);
  });

  it('a missing required value (null) says how to get the default', () => {
    expect(problemsOf(loadYaml('state_dir: null\n').run).lines).toEqual(['state_dir: null: must be set to a directory path; remove the key to use the default']);
    // Any key that null does not fit: the message names the way out and the default it gives.
    expect(problemsOf(loadYaml('api:\n  wait: null\nbatch:\n  max_bytes: ~\nlimits:\n  max_in_flight: null\n').run).lines).toEqual([
      'api.wait: null: expected true or false; remove the key to use the default (true)',
      'batch.max_bytes: null: expected a size: bytes (10000000) or a string like 10MB or 64MiB; remove the key to use the default (10000000)',
      'limits.max_in_flight: null: expected auto (adaptive, the default) or a positive integer; remove the key to use the default ("auto")',
    ]);
  });

  it('spool.exclude takes glob strings: a number or a boolean is refused, with the way to keep it as a name', () => {
    expect(problemsOf(loadYaml('spool:\n  exclude: [1, true, "**/*.tmp"]\n').run).lines).toEqual([
      'spool.exclude[0]: 1: must be a glob string, e.g. "**/*.tmp" (quote it, "1", if a file is named so)',
      'spool.exclude[1]: true: must be a glob string, e.g. "**/*.tmp" (quote it, "true", if a file is named so)',
    ]);
    expect(loadYaml('spool:\n  exclude: ["1"]\n').run().config.spool.exclude).toHaveLength(1);
  });

  it('returns a deeply frozen config', () => {
    const { config } = loadYaml('spool:\n  sources:\n    - include: [a]\n      datasource: x\n').run();
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.api)).toBe(true);
    expect(Object.isFrozen(config.spool.sources)).toBe(true);
    expect(Object.isFrozen(config.spool.sources[0]!.include)).toBe(true);
    expect(() => {
      (config.batch as { linger_ms: number }).linger_ms = 1;
    }).toThrow(TypeError);
  });

  it('warns when max_line_bytes exceeds batch.max_bytes, the fallback exceeds the budget, or base_url ends in /v0', () => {
    const { warnings } = loadYaml('api:\n  base_url: https://api.eu.example.com/v0\n  token: t\nbatch:\n  max_bytes: 5MB\nlimits:\n  requests_per_second: 5\n').run();
    expect(warnings).toEqual([
      'spool.max_line_bytes (10MB) is above batch.max_bytes (5MB): a line longer than a batch cannot be sent and goes to dead letters (line_too_long); set spool.max_line_bytes <= batch.max_bytes to say so explicitly',
      'limits.fallback_requests_per_second (10) is above limits.requests_per_second (5); while Redis is down each agent would send more than the shared budget',
      'api.base_url ends in /v0; spoolship adds /v0/events itself, so give the host only',
    ]);
  });

  it('warns when a fixed max_in_flight is above what HTTP/1.1 has connections for (not for auto, nor over HTTP/2, which shares them)', () => {
    const base = 'api:\n  base_url: http://127.0.0.1:7181\n  token: t\n';
    expect(loadYaml(`${base}limits:\n  max_in_flight: 500\n  max_connections: 10\n`).run().warnings).toEqual([
      'limits.max_in_flight (500) is above limits.max_connections (10): over HTTP/1.1 each request in flight needs its own connection, so at most 10 go at once and the rest wait; raise limits.max_connections or lower limits.max_in_flight',
    ]);
    // auto keeps within max_connections itself.
    expect(loadYaml(`${base}limits:\n  max_connections: 50\n`).run().warnings).toEqual([]);
    expect(loadYaml(`${base}limits:\n  max_in_flight: 50\n  max_connections: 50\n`).run().warnings).toEqual([]);
    expect(loadYaml(`${base.replace('http://', 'https://')}  http2: true\nlimits:\n  max_connections: 4\n`).run().warnings).toEqual([]);
  });

  it('has no default api.base_url: a sending command is refused naming the key, others load', () => {
    const { config, warnings } = loadYaml('log:\n  level: debug\n').run();
    expect(config.api.base_url).toBeNull();
    expect(warnings.join('\n')).not.toContain('no API token'); // nowhere to send, so no token to want yet
    const { lines } = problemsOf(() => loadYaml('log:\n  level: debug\n', { SPOOLSHIP_TOKEN: 'tok-123456' }).run({ tokenRequired: true }));
    expect(lines[0]).toMatch(/^api\.base_url: null: not set, and it has no default .*https:\/\/api\.tinybird\.co/);
    expect(loadYaml('api:\n  base_url: https://api.test\n').run().warnings).toContain(
      'no API token: set api.token, api.token_file or SPOOLSHIP_TOKEN; the Events API answers 401 without one',
    );
  });
});

describe('resolveConfig (an already-parsed object, e.g. on SIGHUP)', () => {
  it('validates, applies env overrides and does not modify its input', () => {
    const input = { batch: { linger_ms: 200 }, spool: { sources: [{ include: ['x/*.ndjson'], datasource: 'ds' }] } };
    const before = structuredClone(input);
    const { config } = resolveConfig(input, { env: { SPOOLSHIP_LOG__LEVEL: 'debug' }, cwd: '/srv', baseDir: '/etc/spoolship' });
    expect(config.batch.linger_ms).toBe(200);
    expect(config.log.level).toBe('debug');
    expect(config.spool.sources[0]!.include).toEqual(['/etc/spoolship/x/*.ndjson']);
    expect(config.state_dir).toBe('/srv/state');
    expect(input).toEqual(before);
  });

  it('throws ConfigError with every problem', () => {
    expect(() => resolveConfig({ batch: { linger_ms: -1 }, bogus: 1 }, { env: {}, cwd: '/', baseDir: '/' })).toThrow(ConfigError);
  });
});

describe('redactConfig', () => {
  it('replaces tokens and the redis password with ***, keeps nulls', () => {
    const { config } = loadYaml('api:\n  token: abc\nlimits:\n  redis_url: rediss://user:p%40ss@redis:6380/0\n').run();
    const shown = redactConfig(config);
    expect(shown.api.token).toBe('***');
    expect(shown.clusters.token).toBeNull();
    expect(shown.limits.redis_url).toBe('rediss://user:***@redis:6380/0');
    expect(config.api.token).toBe('abc');
  });

  it('replaces the proxy password with ***, in the printed config and in a problem about api.proxy', () => {
    const { config } = loadYaml('api:\n  proxy: http://squid:pr0xyPass@proxy.internal:3128\n').run();
    expect(redactConfig(config).api.proxy).toBe('http://squid:***@proxy.internal:3128');
    expect(config.api.proxy).toBe('http://squid:pr0xyPass@proxy.internal:3128');
    let err: unknown;
    try {
      resolveConfig({ api: { proxy: 'http://squid:pr0xyPass@proxy.internal:3128/some/path' } }, { env: {}, cwd: '/', baseDir: '/' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('api.proxy');
    expect((err as Error).message).not.toContain('pr0xyPass');
  });
});
