// What a command that talks to the API needs of the network beside its
// address: the proxy route and the client certificate. `run` keeps the
// certificate's source to watch it (agent.ts); `send`, `dead-letter replay`
// and `clusters` read both once here (`clusters` the CA file too).
import { DIRECT, proxyRoute, type ProxyRoute } from '../config/proxy.js';
import type { Config } from '../config/types.js';
import { readKeyFileSync } from '../util/bounded-read.js';
import { ClientIdentitySource, type ClientIdentity } from './client-identity.js';
import type { TlsMaterial } from './dispatcher.js';

export interface NetworkSetup {
  route: ProxyRoute;
  identity: ClientIdentity | null;
}

/** The in-process emulator (api.base_url: embedded) is reached directly, without a client certificate. */
export const EMBEDDED_NETWORK: NetworkSetup = { route: DIRECT, identity: null };

/** api.ca_file and the client certificate as TLS material (`clusters`, which has no watch); a file that cannot be read is a config error naming its key. */
export async function readTlsMaterial(files: { ca: string | null; cert: string | null; key: string | null }): Promise<TlsMaterial> {
  const identity = (await ClientIdentitySource.create(files.cert, files.key)).get();
  return { ...(files.ca ? { ca: readKeyFileSync('api.ca_file', files.ca) } : {}), ...(identity ?? {}) };
}

export async function readNetworkSetup(c: Readonly<Config>, baseUrl: string, env: NodeJS.ProcessEnv): Promise<NetworkSetup> {
  const source = await ClientIdentitySource.create(c.api.client_cert_file, c.api.client_key_file);
  return { route: proxyRoute(c.api.proxy, env, baseUrl), identity: source.get() };
}
