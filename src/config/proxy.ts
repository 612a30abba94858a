// Which forward proxy a request to the API takes (api.proxy): the
// environment's, as curl reads it, when the key is null; none when it is "";
// else the URL given. The environment is read here, in src/config, and the
// answer is a value passed down: nothing below reads process.env.
//
// curl's rules, which operators already know from their hosts: an https://
// target takes https_proxy (or HTTPS_PROXY), an http:// one http_proxy (or
// HTTP_PROXY); the lower-case name wins; an empty variable is unset; a value
// without a scheme is http://; no_proxy (or NO_PROXY) lists hosts reached
// directly (`*` = every host, `.example.com` and `example.com` = the domain
// and its subdomains, `host:port` = that port only). NO_PROXY applies to a
// proxy from the environment only: a URL in api.proxy is used for every
// request, since the config names the one host it talks to.
import { ConfigError } from '../errors.js';
import { redactUrlPassword } from './redact.js';

export type ProxyRoute =
  | { kind: 'direct' }
  | {
      kind: 'proxy';
      /** http(s)://[user:password@]host:port: the password is in it; print `shown` instead. */
      url: string;
      /** The URL with its password replaced by ***, for logs and messages. */
      shown: string;
      /** Where it came from: `api.proxy`, or the variable's name. */
      from: string;
      /** The no_proxy list undici applies per request (environment only); null: none. */
      noProxy: string | null;
    };

export const DIRECT: ProxyRoute = { kind: 'direct' };

/** The route to `target` (the API's base URL) for `api.proxy` = `setting`. */
export function proxyRoute(setting: string | null, env: NodeJS.ProcessEnv, target: string): ProxyRoute {
  if (setting === '') return DIRECT;
  if (setting !== null) return { kind: 'proxy', url: setting, shown: redactUrlPassword(setting), from: 'api.proxy', noProxy: null };
  const https = new URL(target).protocol === 'https:';
  const names = https ? ['https_proxy', 'HTTPS_PROXY'] : ['http_proxy', 'HTTP_PROXY'];
  const name = names.find((n) => (env[n] ?? '') !== '');
  if (name === undefined) return DIRECT;
  const url = envProxyUrl(name, env[name]!);
  const noProxy = env.no_proxy || env.NO_PROXY || null;
  return { kind: 'proxy', url, shown: redactUrlPassword(url), from: name, noProxy };
}

function envProxyUrl(name: string, value: string): string {
  const text = value.includes('://') ? value : `http://${value}`;
  let u: URL | null = null;
  try {
    u = new URL(text);
  } catch {
    // reported below
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
    throw new ConfigError([{ path: name, value: redactUrlPassword(text), why: 'not a proxy URL such as http://proxy.internal:3128; fix the variable, or set api.proxy ("" for none)' }]);
  }
  return text;
}
