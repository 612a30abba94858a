// What a command that talks to the API needs of the network beside its
// address: the proxy route and the client certificate. `run` keeps the
// certificate's source to watch it (agent.ts); `send`, `dead-letter replay`
// and `clusters` read both once here.
import { DIRECT, proxyRoute, type ProxyRoute } from '../config/proxy.js';
import type { Config } from '../config/types.js';
import { ClientIdentitySource, type ClientIdentity } from './client-identity.js';

export interface NetworkSetup {
  route: ProxyRoute;
  identity: ClientIdentity | null;
}

/** The in-process emulator (api.base_url: embedded) is reached directly, without a client certificate. */
export const EMBEDDED_NETWORK: NetworkSetup = { route: DIRECT, identity: null };

export async function readNetworkSetup(c: Readonly<Config>, baseUrl: string, env: NodeJS.ProcessEnv): Promise<NetworkSetup> {
  const source = await ClientIdentitySource.create(c.api.client_cert_file, c.api.client_key_file);
  return { route: proxyRoute(c.api.proxy, env, baseUrl), identity: source.get() };
}
