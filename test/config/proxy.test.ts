// api.proxy and the environment as curl reads it (src/config/proxy.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { proxyRoute } from '../../src/config/proxy.js';

const API = 'https://api.example.com';

describe('proxyRoute', () => {
  it('"" never proxies, whatever the environment says', () => {
    expect(proxyRoute('', { HTTPS_PROXY: 'http://p:3128' }, API)).toEqual({ kind: 'direct' });
  });

  it('a URL is that proxy for every host, NO_PROXY ignored; its password only in url', () => {
    const r = proxyRoute('http://u:s3cret@p:3128', { NO_PROXY: '*' }, API);
    expect(r).toEqual({ kind: 'proxy', url: 'http://u:s3cret@p:3128', shown: 'http://u:***@p:3128', from: 'api.proxy', noProxy: null });
  });

  it('null: the variable of the target\'s scheme, the lower-case name first, an empty one unset', () => {
    const env = { https_proxy: 'http://lower:1', HTTPS_PROXY: 'http://upper:2', HTTP_PROXY: 'http://plain:3' };
    expect(proxyRoute(null, env, API)).toMatchObject({ url: 'http://lower:1', from: 'https_proxy' });
    expect(proxyRoute(null, { ...env, https_proxy: '' }, API)).toMatchObject({ url: 'http://upper:2', from: 'HTTPS_PROXY' });
    expect(proxyRoute(null, env, 'http://emulator:7181')).toMatchObject({ url: 'http://plain:3', from: 'HTTP_PROXY' });
    // curl does not send https:// through http_proxy.
    expect(proxyRoute(null, { HTTP_PROXY: 'http://plain:3' }, API)).toEqual({ kind: 'direct' });
    expect(proxyRoute(null, {}, API)).toEqual({ kind: 'direct' });
  });

  it('null: NO_PROXY (either case) goes with it; a value without a scheme is http://', () => {
    expect(proxyRoute(null, { HTTPS_PROXY: 'u:pw@p:3128', no_proxy: 'localhost,.internal' }, API)).toEqual({
      kind: 'proxy',
      url: 'http://u:pw@p:3128',
      shown: 'http://u:***@p:3128',
      from: 'HTTPS_PROXY',
      noProxy: 'localhost,.internal',
    });
    expect(proxyRoute(null, { HTTPS_PROXY: 'p:3128', NO_PROXY: 'api.example.com' }, API)).toMatchObject({ noProxy: 'api.example.com' });
  });

  it('a variable that is no URL is a config error naming it, without its password', () => {
    let err: unknown;
    try {
      proxyRoute(null, { HTTPS_PROXY: 'ftp://u:hunter22@p:21' }, API);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('HTTPS_PROXY');
    expect((err as Error).message).not.toContain('hunter22');
  });
});
