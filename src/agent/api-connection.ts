// The agent's way to the API: its address (the embedded emulator's, when
// asked), the token and the client certificate (each watched, and re-read on
// SIGHUP), the proxy route, and the delivery engine on them (HTTP client,
// request budget, codec: sender/engine.ts). Each piece goes on the agent's
// stack as it starts (lifecycle.ts), so a failed start ends exactly those.
import type { Codec } from '../codec/index.js';
import { apiBaseUrl } from '../config/index.js';
import { DIRECT, proxyRoute, type ProxyRoute } from '../config/proxy.js';
import type { Config } from '../config/types.js';
import { startEmbedded, type EmbeddedEmulator } from '../emulator/embedded.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { ClientIdentitySource } from '../net/client-identity.js';
import { EMBEDDED_NETWORK } from '../net/setup.js';
import { clientCertChanged, clientCertRefused, proxyInUse, tokenChanged, tokenFileRefused } from '../observe/state-events.js';
import { openDelivery, type DeliveryEngine } from '../sender/engine.js';
import { TOKEN_FILE_READABLE, TokenSource, otherCanRead } from '../sender/token.js';
import type { Clock } from '../util/clock.js';
import { partOf, type StartedParts } from './lifecycle.js';
import type { BudgetMemory } from '../sender/budget-memory.js';
import { ConfigError } from '../errors.js';
import { unreadableFiles } from './preflight.js';

export class ApiConnection {
  engine!: DeliveryEngine;
  private token!: TokenSource;
  /** api.client_cert_file / api.client_key_file, watched; null for the embedded emulator. */
  private identity: ClientIdentitySource | null = null;
  private route: ProxyRoute = DIRECT;
  private embedded: EmbeddedEmulator | null = null;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly o: {
      log: Logger;
      metrics: Metrics;
      /** The agent's stack of started parts. */
      parts: StartedParts;
      codec: Codec;
      clock: Clock;
      /** What `api.proxy: null` reads (HTTPS_PROXY, NO_PROXY and the like). */
      env: NodeJS.ProcessEnv;
      /** What was parked or waits for a retry goes again (the sender's wake: the sender is built on this connection, after it). */
      wake: () => void;
      /** The process's request budget memory, kept across a reload (sender/budget-memory.ts). */
      budget?: BudgetMemory;
    },
  ) {}

  /**
   * The token, the client certificate and the proxy route, read before
   * anything is written: a start refused for them creates nothing. The
   * embedded emulator's token comes with it, in open().
   */
  async readCredentials(): Promise<void> {
    const c = this.config;
    if (c.api.base_url === 'embedded') return;
    // Every file that cannot be read, at once, before the state_dir is touched
    // (a reload checks the same way; a start listed only the first).
    const unreadable = await unreadableFiles(c);
    if (unreadable.length > 0) throw new ConfigError(unreadable);
    this.token = await TokenSource.create(c.api.token, c.api.token_file);
    this.identity = await ClientIdentitySource.create(c.api.client_cert_file, c.api.client_key_file);
    this.route = proxyRoute(c.api.proxy, this.o.env, apiBaseUrl(c));
  }

  /** The API's address (the embedded emulator's, when asked), the token, the HTTP client and the request budget; returns the address. */
  async open(): Promise<string> {
    const { config: c } = this;
    const { log, metrics, parts } = this.o;
    let baseUrl = apiBaseUrl(c);
    if (baseUrl === 'embedded') {
      this.embedded = await startEmbedded(c.state_dir);
      parts.add('embedded emulator', partOf(() => this.embedded?.close()));
      baseUrl = this.embedded.url;
      this.token = await TokenSource.create(this.embedded.token, null);
      log.info({ event: 'embedded_emulator_started', url: baseUrl }, 'embedded emulator started');
    } else {
      await this.warnIfReadable();
    }
    this.token.watch(() => this.onNewToken(), tokenFileRefused(log, c.api.token_file));
    parts.add('token watch', this.token);
    const identity = this.identity;
    if (identity) {
      identity.watch(clientCertChanged(log, () => this.renewIdentity()), clientCertRefused(log));
      parts.add('client certificate watch', identity);
    }
    if (this.route.kind === 'proxy') proxyInUse(log, this.route);
    this.engine = await openDelivery(c, {
      baseUrl,
      network: identity ? { route: this.route, identity: identity.get() } : EMBEDDED_NETWORK,
      token: this.token,
      log,
      onFallback: (active) => metrics.limiterFallback.set(active ? 1 : 0),
      codec: this.o.codec,
      clock: this.o.clock,
      memory: this.o.budget,
    });
    parts.add('delivery engine', this.engine);
    return baseUrl;
  }

  /** SIGHUP: re-read the token file and the client certificate, and retry parked work now. */
  async reload(): Promise<void> {
    const t = await this.token.reload();
    if (t === 'changed') await this.onNewToken();
    else if (typeof t === 'object') tokenFileRefused(this.o.log, this.config.api.token_file)(t.problem);
    const r = await this.identity?.reload();
    if (r === 'changed') clientCertChanged(this.o.log, () => this.renewIdentity())();
    else if (typeof r === 'object') clientCertRefused(this.o.log)(r.problem);
    this.o.wake();
  }

  /** A rotated token file: parked work goes again, and a new file others may read is a WARN as at start. */
  private async onNewToken(): Promise<void> {
    tokenChanged(this.o.log, this.o.wake)();
    await this.warnIfReadable();
  }

  private async warnIfReadable(): Promise<void> {
    const file = this.config.api.token_file;
    if (file && (await otherCanRead(file))) this.o.log.warn({ event: 'token_file_readable', file }, TOKEN_FILE_READABLE);
  }

  /** New connections with the client certificate now in use; what was parked or waits for a retry goes again. */
  private renewIdentity(): void {
    this.engine.client.renew(this.identity?.get() ?? null);
    this.o.wake();
  }
}
