// The one mapping from the config onto the HTTP client's and the sender's
// settings, shared by `run`, `send` and `dead-letter replay`, so a key
// (a timeout, a retry setting, a limit) cannot reach one path and miss another.
import type { Config } from '../config/types.js';
import type { EventsClientOptions } from './http-client.js';
import type { SenderOptions } from './sender.js';

export function clientOptionsFrom(c: Readonly<Config>, baseUrl: string, token: () => string): EventsClientOptions {
  return {
    baseUrl,
    token,
    wait: c.api.wait,
    http2: c.api.http2,
    caFile: c.api.ca_file,
    timeoutMs: c.api.timeout_ms,
    maxConnections: c.limits.max_connections,
  };
}

export function senderSettingsFrom(c: Readonly<Config>): Pick<SenderOptions, 'backoff' | 'http2' | 'wait' | 'maxInFlight' | 'maxBytes'> {
  return {
    backoff: { initialMs: c.retry.initial_ms, maxMs: c.retry.max_ms, multiplier: c.retry.multiplier },
    http2: c.api.http2,
    wait: c.api.wait,
    maxInFlight: c.limits.max_in_flight,
    maxBytes: c.batch.max_bytes,
  };
}
