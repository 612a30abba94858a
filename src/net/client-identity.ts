// Mutual TLS: the client certificate and key (api.client_cert_file,
// api.client_key_file, PEM), read at start and re-read like the token file:
// on SIGHUP and when either file's modification time, size or inode changes
// (polled: a Kubernetes Secret update swaps a symlink and inotify misses it).
//
// A pair is taken only when the key matches the certificate: cert-manager
// and friends write the two files one after the other, and a request made
// between the writes would fail its handshake. Until the pair matches, the
// previous one stays in use and the next poll looks again. The key's bytes
// never leave this module but in the TLS options.
import { createSecureContext } from 'node:tls';
import { promises as fsp } from 'node:fs';
import { ConfigError } from '../errors.js';
import { MAX_SECRET_FILE_BYTES, readRegularFile, UnreadableFileError } from '../util/bounded-read.js';
import type { LongLived } from '../util/lifecycle.js';
import { FilePoll } from '../util/file-poll.js';

export interface ClientIdentity {
  cert: Buffer;
  key: Buffer;
}

/** Why a changed pair was not taken (logged once per change of the files). */
export type IdentityProblem = string;

export class ClientIdentitySource implements LongLived {
  private value: ClientIdentity | null = null;
  private stamp = '';
  private refused = '';
  private readonly poll = new FilePoll();

  private constructor(private readonly files: { cert: string; key: string } | null) {}

  /** Both files set: read them now (a missing or unusable pair is a config error); else no client certificate. */
  static async create(certFile: string | null, keyFile: string | null): Promise<ClientIdentitySource> {
    // Only one of the two set is a config warning (cross-checks.ts): no client certificate.
    if (certFile === null || keyFile === null) return new ClientIdentitySource(null);
    const src = new ClientIdentitySource({ cert: certFile, key: keyFile });
    const r = await src.read();
    if ('problem' in r) throw new ConfigError([{ path: 'api.client_cert_file', value: certFile, why: `${r.problem}; fix the files or unset api.client_cert_file and api.client_key_file` }]);
    src.take(r);
    return src;
  }

  get(): ClientIdentity | null {
    return this.value;
  }

  /** Re-read both files: 'changed' when a new matching pair is in use, a problem when the changed files are not usable (the old pair stays). */
  async reload(): Promise<'changed' | 'unchanged' | { problem: IdentityProblem }> {
    if (!this.files) return 'unchanged';
    const r = await this.read();
    if ('problem' in r) {
      // Once per change of the files, not once per poll.
      if (r.stamp === this.refused) return 'unchanged';
      this.refused = r.stamp;
      return { problem: r.problem };
    }
    if (r.stamp === this.stamp) return 'unchanged';
    const same = this.value !== null && this.value.cert.equals(r.identity.cert) && this.value.key.equals(r.identity.key);
    this.take(r);
    return same ? 'unchanged' : 'changed';
  }

  watch(onChange: () => void, onProblem: (problem: IdentityProblem) => void): void {
    if (!this.files) return;
    this.poll.start(async () => {
      const r = await this.reload();
      if (r === 'changed') onChange();
      else if (typeof r === 'object') onProblem(r.problem);
    });
  }

  close(): Promise<void> {
    return this.poll.close();
  }

  destroy(): Promise<void> {
    return this.poll.destroy();
  }

  private take(r: { identity: ClientIdentity; stamp: string }): void {
    this.value = r.identity;
    this.stamp = r.stamp;
    this.refused = '';
  }

  private async read(): Promise<{ identity: ClientIdentity; stamp: string } | { problem: string; stamp: string }> {
    const { cert: certFile, key: keyFile } = this.files!;
    let stamp = '';
    try {
      const [c, k] = await Promise.all([fsp.stat(certFile), fsp.stat(keyFile)]);
      stamp = `${c.mtimeMs}:${c.size}:${c.ino}/${k.mtimeMs}:${k.size}:${k.ino}`;
      if (stamp === this.stamp && this.value) return { identity: this.value, stamp };
      // Non-blocking and bounded, as the token file: a FIFO or a device here must not hang or fill memory.
      const [cert, key] = await Promise.all([readRegularFile(certFile, MAX_SECRET_FILE_BYTES), readRegularFile(keyFile, MAX_SECRET_FILE_BYTES)]);
      // Throws for a key that does not match the certificate, or for either not being PEM.
      createSecureContext({ cert, key });
      return { identity: { cert, key }, stamp };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      // OpenSSL's reason names what is wrong ("key values mismatch"); it never quotes the key.
      const unreadable = e.syscall !== undefined || err instanceof UnreadableFileError;
      const why = unreadable ? `cannot read it (${e.code ?? 'error'})` : `not a matching PEM certificate and key (${e.message})`;
      return { problem: `client certificate ${certFile} / key ${keyFile}: ${why}`, stamp: stamp || `error:${e.code ?? ''}` };
    }
  }
}
