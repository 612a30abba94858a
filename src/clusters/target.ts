// Where the organization, the admin token and the API host come from
// (docs/clusters.md, docs/configuration.md): org from --org or clusters.org; token from --token,
// SPOOLSHIP_ADMIN_TOKEN or clusters.token; base URL from --base-url or
// api.base_url. The config file (-c, else the usual search) and the
// SPOOLSHIP_* variables are always read, for the keys this command uses
// (api.proxy and the TLS files too: "every command that talks to the
// platform"); flags alone work with no config file at all. This is the only
// place that knows about the config loader.
import { loadConfig, type Config } from '../config/index.js';
import { UsageError } from '../errors.js';
import { tokenCharProblem } from '../util/token-chars.js';

export interface TargetFlags {
  org?: string;
  token?: string;
  baseUrl?: string;
  /** -c FILE */
  configFile?: string;
}

export interface Target {
  org: string;
  token: string;
  baseUrl: string;
  /** api.proxy of the config file read, else null (from the environment). */
  proxy: string | null;
  /** api.ca_file, api.client_cert_file and api.client_key_file of the config file read (null: none). */
  tlsFiles: { ca: string | null; cert: string | null; key: string | null };
  /** SPOOLSHIP_* variables that name no key (a misspelt one may be why a flag is missing). */
  warnings: string[];
}

export function resolveTarget(flags: TargetFlags, env: NodeJS.ProcessEnv, cwd: string): Target {
  const envToken = env.SPOOLSHIP_ADMIN_TOKEN || undefined;
  // Only these keys are used: an unset ${VAR} elsewhere (api.token, say) is no problem here.
  const usedKeys = ['api.proxy', 'api.ca_file', 'api.client_cert_file', 'api.client_key_file', ...(flags.org ? [] : ['clusters.org']), ...(flags.token || envToken ? [] : ['clusters.token']), ...(flags.baseUrl ? [] : ['api.base_url'])];
  const loaded = loadConfig({ file: flags.configFile ?? null, env, cwd, usedKeys });
  const config: Readonly<Config> = loaded.config;

  const org = flags.org || config.clusters.org;
  if (!org) throw new UsageError('no organization: give --org ORG or set clusters.org in the config file');
  const token = flags.token || envToken || config.clusters.token;
  if (!token) throw new UsageError('no admin token: give --token T, set SPOOLSHIP_ADMIN_TOKEN, or set clusters.token in the config file');
  const badToken = tokenCharProblem(token);
  if (badToken) throw new UsageError(`the admin token ${badToken}`);
  const baseUrl = flags.baseUrl ?? configuredBaseUrl(config);
  const tlsFiles = { ca: config.api.ca_file, cert: config.api.client_cert_file, key: config.api.client_key_file };
  return { org, token, baseUrl: checkBaseUrl(baseUrl), proxy: config.api.proxy, tlsFiles, warnings: loaded.envWarnings };
}

function configuredBaseUrl(config: Readonly<Config>): string {
  const url = config.api.base_url;
  // The placeholder default would send the admin token to a host that is not
  // the platform; "embedded" is an in-process emulator this command cannot reach.
  if (!url || url === 'embedded') {
    const why = url === 'embedded' ? " (api.base_url is 'embedded', which only the agent itself can use)" : '';
    throw new UsageError(`no API host${why}: give --base-url URL or set api.base_url in the config file`);
  }
  return url;
}

function checkBaseUrl(text: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new UsageError(`--base-url '${text}': not a URL; give the API host, e.g. https://api.tinybird.co`);
  }
  if (u.username || u.password) {
    // Refused as api.base_url is (config/checks.ts), and never echoed: the password would be printed.
    throw new UsageError(`--base-url must not carry credentials (${u.protocol}//***@${u.host}); give the API host only, and the admin token with --token or SPOOLSHIP_ADMIN_TOKEN`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`--base-url '${text}': must be http:// or https://`);
  // The paths are appended to it: a query or fragment would swallow them (`http://h?x=1` sent GET /?x=1/v0/...).
  // (Not echoed whole: a query may carry a secret.)
  if (/[?#]/.test(text)) throw new UsageError(`--base-url ${u.origin}${u.pathname}?...: give the API host without a query or fragment`);
  return text;
}
