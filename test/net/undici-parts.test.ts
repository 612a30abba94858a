// The agent loads undici's dispatchers from their own files, not from the
// package's index (src/net/undici-parts.ts): they must be the very classes
// and calls the index gives, request() on their prototype included, so that
// an upgrade that moves a file fails here and not in production.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadUndiciParts } from '../../src/net/undici-parts.js';

describe('undici parts', () => {
  it("are the index's Pool, ProxyAgent, EnvHttpProxyAgent and buildConnector, with its request() and connect() on every dispatcher", async () => {
    const parts = await loadUndiciParts();
    // Before anything loads the index (which would put them there itself).
    expect([typeof parts.Pool.prototype.request, typeof parts.Pool.prototype.connect]).toEqual(['function', 'function']);
    const { request, connect } = parts.Pool.prototype;
    const index = createRequire(import.meta.url)('undici') as typeof import('undici');
    expect(parts.Pool).toBe(index.Pool);
    expect(parts.ProxyAgent).toBe(index.ProxyAgent);
    expect(parts.EnvHttpProxyAgent).toBe(index.EnvHttpProxyAgent);
    expect(parts.buildConnector).toBe(index.buildConnector);
    expect(index.Dispatcher.prototype.request).toBe(request);
    expect(index.Dispatcher.prototype.connect).toBe(connect);
  });
});
