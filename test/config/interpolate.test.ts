import { describe, expect, it } from 'vitest';
import { interpolate } from '../../src/config/interpolate.js';
import { load, problemsOf, tempDir, writeFile } from './helpers.js';

describe('interpolate (strings)', () => {
  it('substitutes ${VAR}, ${VAR:-default} and $$', () => {
    const env = { HOST: 'api.eu', EMPTY: '' };
    expect(interpolate('https://${HOST}/x', env).text).toBe('https://api.eu/x');
    expect(interpolate('${PORT:-443}', env).text).toBe('443');
    expect(interpolate('${HOST:-fallback}', env).text).toBe('api.eu');
    // As in sh, ":-" also covers a variable set to "".
    expect(interpolate('${EMPTY:-d}', env).text).toBe('d');
    expect(interpolate('${EMPTY}', env).text).toBe('');
    expect(interpolate('cost $$5 and $HOME', env).text).toBe('cost $5 and $HOME');
    expect(interpolate('$${HOST}', env).text).toBe('${HOST}');
  });

  it('reports unset variables and malformed references', () => {
    const r = interpolate('${A}-${B:-b}-${C}', {});
    expect(r.missing).toEqual(['A', 'C']);
    expect(r.names).toEqual(['A', 'B', 'C']);
    expect(interpolate('${1BAD}', {}).malformed).toEqual(['${1BAD}']);
    expect(interpolate('${OPEN', {}).malformed).toEqual(['${OPEN']);
  });
});

describe('interpolation in the config file', () => {
  it('fills values from env and reads a lone plain reference as YAML', () => {
    const dir = tempDir();
    const file = writeFile(
      dir,
      'c.yaml',
      [
        'api:',
        '  base_url: https://${API_HOST}',
        '  token: ${TOKEN}',
        '  wait: ${WAIT:-false}',
        'batch:',
        '  linger_ms: ${LINGER:-250}',
        '  max_bytes: ${BATCH:-5MB}',
        'clusters:',
        '  org: "${ORG}"',
        'state_dir: ${STATE}/agent',
      ].join('\n'),
    );
    const env = { API_HOST: 'api.eu.example.com', TOKEN: '0123', ORG: '42', STATE: '/var/lib' };
    const { config } = load({ file, cwd: dir, env });
    expect(config.api.base_url).toBe('https://api.eu.example.com');
    // A token that YAML would read as a number keeps its exact text.
    expect(config.api.token).toBe('0123');
    expect(config.api.wait).toBe(false);
    expect(config.batch.linger_ms).toBe(250);
    expect(config.batch.max_bytes).toBe(5_000_000);
    expect(config.clusters.org).toBe('42');
    expect(config.state_dir).toBe('/var/lib/agent');
  });

  it('an unset ${VAR} without default is a problem naming the variable and the key', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: ${API_URL}\nstate_dir: ${STATE_DIR}\n');
    const { lines } = problemsOf(() => load({ file, cwd: dir }));
    expect(lines).toContain('api.base_url: "${API_URL}": environment variable API_URL is not set; set it, or give a default: ${API_URL:-value}');
    expect(lines.some((l) => l.startsWith('state_dir: "${STATE_DIR}"') && l.includes('STATE_DIR is not set'))).toBe(true);
    expect(lines).toHaveLength(2);
  });

  it('$$ is a literal $, and comments are never interpolated', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', '# uses ${NOT_SET_ANYWHERE}\nlimits:\n  budget_id: cost$$team # ${ALSO_NOT_SET}\n');
    const { config } = load({ file, cwd: dir });
    expect(config.limits.budget_id).toBe('cost$team');
  });

  it('${VAR:-} gives null for optional strings and tokens', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'clusters:\n  org: ${ORG:-}\n  token: ${SPOOLSHIP_ADMIN_TOKEN:-}\n');
    const { config } = load({ file, cwd: dir });
    expect(config.clusters.org).toBeNull();
    expect(config.clusters.token).toBeNull();
  });

  it('names the variable of an unset token reference, but never shows literal token text', () => {
    const dir = tempDir();
    const one = problemsOf(() => load({ file: writeFile(dir, 'a.yaml', 'api:\n  token: ${SPOOLSHIP_TOKEN}\n'), cwd: dir }));
    expect(one.lines).toEqual(['api.token: "${SPOOLSHIP_TOKEN}": environment variable SPOOLSHIP_TOKEN is not set; set it, or give a default: ${SPOOLSHIP_TOKEN:-value}']);
    const mixed = problemsOf(() => load({ file: writeFile(dir, 'b.yaml', 'api:\n  token: s3cr3t${SUFFIX}\n'), cwd: dir }));
    expect(mixed.lines[0]).toMatch(/^api.token: "\*\*\*": environment variable SUFFIX is not set/);
    expect(mixed.error.message).not.toContain('s3cr3t');
  });

  it('a malformed reference is a problem with the fix', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'limits:\n  budget_id: ${TEAM-x}\n');
    const { lines } = problemsOf(() => load({ file, cwd: dir }));
    expect(lines).toEqual(['limits.budget_id: "${TEAM-x}": ${TEAM-x} is not a valid reference; write ${NAME} or ${NAME:-default}, and $$ for a literal $']);
  });

  it('an env override of the key replaces a failing ${VAR}', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', 'api:\n  base_url: ${API_URL}\n');
    const { config } = load({ file, cwd: dir, env: { SPOOLSHIP_API__BASE_URL: 'embedded' } });
    expect(config.api.base_url).toBe('embedded');
  });
});
