// A URL key written slightly wrong (one slash, a leading space, no scheme)
// is a config error, and the problem shows its password as ***: a URL parser
// reads "http:/u:pw@host" as http://u:pw@host, so the proxy was used while
// every place that hides a password (check-config, the `proxy` event, retry
// causes, /status) looked for "scheme://" and printed it.
import { describe, expect, it } from 'vitest';
import { redactUrlPassword } from '../../src/config/index.js';
import { load, problemsOf, tempDir, writeFile } from './helpers.js';

const BASE = 'api:\n  base_url: https://api.example.com\n  token: p.tok\n';

describe('URL keys written slightly wrong', () => {
  it.each([
    ['api.proxy', 'one slash', 'http:/puser:PROXYPASS@127.0.0.1:3128'],
    ['api.proxy', 'a leading space', ' http://puser:PROXYPASS@127.0.0.1:3128'],
    ['api.proxy', 'no scheme', 'puser:PROXYPASS@127.0.0.1:3128'],
    ['limits.redis_url', 'no scheme', 'ruser:PROXYPASS@redis:6379'],
    ['limits.redis_url', 'one slash', 'redis:/ruser:PROXYPASS@redis:6379'],
    ['api.base_url', 'one slash', 'https:/api.example.com'],
  ])('%s with %s: a problem naming the key, the password not shown', (key, _what, value) => {
    const dir = tempDir();
    const [section, name] = key.split('.') as [string, string];
    const yaml = section === 'api' ? BASE.replace(name === 'base_url' ? /  base_url: .*\n/ : /$/, `  ${name}: "${value}"\n`) : `${BASE}${section}:\n  ${name}: "${value}"\n`;
    const file = writeFile(dir, 'c.yaml', yaml);
    const { lines } = problemsOf(() => load({ file, cwd: dir, env: {}, tokenRequired: true }));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${key.replace('.', '\\.')}: `));
    expect(lines[0]).toMatch(/must start with/);
    expect(lines[0]).not.toContain('PROXYPASS');
  });

  it('redactUrlPassword hides the password of a URL without "scheme://" too', () => {
    expect(redactUrlPassword('http:/puser:PW@h:1')).toBe('http:***@h:1');
    expect(redactUrlPassword(' http://puser:PW@h:1')).toBe(' http://puser:***@h:1');
    expect(redactUrlPassword('puser:PW@h:3128')).toBe('puser:***@h:3128');
    expect(redactUrlPassword('user:pa:ss@h')).toBe('user:***@h');
    expect(redactUrlPassword('secret@h')).toBe('***@h');
    expect(redactUrlPassword('h:3128')).toBe('h:3128');
  });
});
