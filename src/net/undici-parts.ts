// The parts of undici the agent's requests use (net/dispatcher.ts), loaded
// without the rest of the package. undici's index also loads fetch,
// WebSocket, EventSource, the cache and mock agents and the cookie helpers,
// whose module reads globalThis.Headers, which makes Node load its own copy
// of undici as well. Under the agent's V8 flags on Node 24, loading the
// index took 0.18-0.23 s of CPU, these files 0.09-0.12 (bench/README.md,
// finding 39): the main thread's start, before the first request.
//
// The paths are undici's own files (the package has no "exports" map); its
// version is pinned in package.json. The one thing its index does that the
// dispatchers need is done here too: request(), connect() and the other
// API calls put on every dispatcher's prototype. test/net/undici-parts.test.ts
// checks that these are the index's own classes and calls.
import v8 from 'node:v8';
import type { Undici } from './dispatcher.js';

/**
 * No tier-up of WebAssembly, and none of V8's dynamic tiering (without which
 * it would tier every function up at once in the background): the run-time
 * equivalent of `--liftoff-only`, which Node 24's V8 reads only from the
 * command line (a larger tiering budget set at run time only delayed the
 * re-compilation: test/util/wasm-tier.test.ts). Why: src/cli/memory.ts.
 */
const WASM_BASELINE_FLAGS = ['--no-wasm-tier-up', '--no-wasm-dynamic-tiering'] as const;

/** Keep WebAssembly compiled by V8's baseline compiler from now on (set before undici compiles llhttp). */
export function keepWasmInBaselineTier(setFlags: (flags: string) => void = (f) => v8.setFlagsFromString(f)): void {
  for (const flag of WASM_BASELINE_FLAGS) setFlags(flag);
}

export async function loadUndiciParts(): Promise<Undici> {
  const [dispatcher, api, pool, proxyAgent, envProxyAgent, connect] = await Promise.all([
    import('undici/lib/dispatcher/dispatcher.js'),
    import('undici/lib/api/index.js'),
    import('undici/lib/dispatcher/pool.js'),
    import('undici/lib/dispatcher/proxy-agent.js'),
    import('undici/lib/dispatcher/env-http-proxy-agent.js'),
    import('undici/lib/core/connect.js'),
  ]);
  // Before any connection compiles llhttp.
  keepWasmInBaselineTier();
  // undici's index.js: Object.assign(Dispatcher.prototype, api).
  Object.assign(dispatcher.default.prototype, api.default);
  return { Pool: pool.default, ProxyAgent: proxyAgent.default, EnvHttpProxyAgent: envProxyAgent.default, buildConnector: connect.default };
}
