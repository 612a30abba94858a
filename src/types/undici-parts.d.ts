// undici's own files that src/net/undici-parts.ts loads instead of its
// index: each is `module.exports = <the class or function>`, typed as
// undici's index types it.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const value: typeof Pool;
  export default value;
}
declare module 'undici/lib/dispatcher/proxy-agent.js' {
  import type { ProxyAgent } from 'undici';
  const value: typeof ProxyAgent;
  export default value;
}
declare module 'undici/lib/dispatcher/env-http-proxy-agent.js' {
  import type { EnvHttpProxyAgent } from 'undici';
  const value: typeof EnvHttpProxyAgent;
  export default value;
}
declare module 'undici/lib/core/connect.js' {
  import type { buildConnector } from 'undici';
  const value: typeof buildConnector;
  export default value;
}
declare module 'undici/lib/dispatcher/dispatcher.js' {
  import type { Dispatcher } from 'undici';
  const value: typeof Dispatcher;
  export default value;
}
declare module 'undici/lib/api/index.js' {
  import type { connect, pipeline, request, stream, upgrade } from 'undici';
  const value: { request: typeof request; stream: typeof stream; pipeline: typeof pipeline; upgrade: typeof upgrade; connect: typeof connect };
  export default value;
}
