// The one mapping from the config onto the HTTP client's and the sender's
// settings, shared by `run`, `send` and `dead-letter replay`, so a key
// (a timeout, a retry setting, a limit) cannot reach one path and miss another.
import type { Config } from '../config/types.js';
import type { NetworkSetup } from '../net/setup.js';
import type { BearerToken, EventsClientOptions } from './http-client.js';
import type { SenderOptions } from './sender.js';

export function clientOptionsFrom(c: Readonly<Config>, baseUrl: string, token: BearerToken, network: NetworkSetup): EventsClientOptions {
  return {
    route: network.route,
    identity: network.identity,
    baseUrl,
    token,
    wait: c.api.wait,
    http2: c.api.http2,
    caFile: c.api.ca_file,
    timeoutMs: c.api.timeout_ms,
    maxConnections: c.limits.max_connections,
  };
}

/** The most requests that can be in flight: a fixed max_in_flight, or where auto may go (its cap, within max_connections). */
export function inFlightCeiling(c: Readonly<Config>): number {
  const l = c.limits;
  return l.max_in_flight === 'auto' ? Math.max(1, Math.min(l.max_in_flight_cap, l.max_connections)) : l.max_in_flight;
}

export function senderSettingsFrom(
  c: Readonly<Config>,
): Pick<SenderOptions, 'backoff' | 'http2' | 'wait' | 'maxInFlight' | 'maxInFlightCap' | 'requestsPerSecond' | 'maxInFlightBytes' | 'maxConnections' | 'maxBytes'> {
  return {
    backoff: { initialMs: c.retry.initial_ms, maxMs: c.retry.max_ms, multiplier: c.retry.multiplier },
    http2: c.api.http2,
    wait: c.api.wait,
    maxInFlight: c.limits.max_in_flight,
    maxInFlightCap: c.limits.max_in_flight_cap,
    requestsPerSecond: c.limits.requests_per_second,
    maxInFlightBytes: c.limits.max_in_flight_bytes,
    maxConnections: c.limits.max_connections,
    maxBytes: c.batch.max_bytes,
  };
}
