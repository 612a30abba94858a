// The client certificate's source (src/net/client-identity.ts): a pair is
// taken only when the key matches the certificate, so a rotation that
// writes the two files one after the other never hands a half-new pair to
// the TLS layer; the refusal is reported once per change of the files.
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { ClientIdentitySource } from '../../src/net/client-identity.js';
import { makeCa, makeClientCert } from '../support/pki.js';

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

function put(from: string, to: string): void {
  copyFileSync(from, `${to}.tmp`);
  renameSync(`${to}.tmp`, to);
}

describe('ClientIdentitySource', () => {
  it('takes a rotated pair only once the key matches the certificate, and says why once per change', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'spoolship-identity-'));
    dirs.push(dir);
    const ca = makeCa(dir, 'ca');
    const a = makeClientCert(dir, ca, 'a');
    const b = makeClientCert(dir, ca, 'b');
    const live = { cert: path.join(dir, 'live.pem'), key: path.join(dir, 'live.key') };
    put(a.certFile, live.cert);
    put(a.keyFile, live.key);
    const src = await ClientIdentitySource.create(live.cert, live.key);
    const first = src.get()!;
    expect(await src.reload()).toBe('unchanged');
    // Half-way through a rotation: b's certificate with a's key.
    put(b.certFile, live.cert);
    const r = await src.reload();
    expect(r).toMatchObject({ problem: expect.stringContaining('live.pem') });
    expect(await src.reload()).toBe('unchanged');
    expect(src.get()).toBe(first);
    put(b.keyFile, live.key);
    expect(await src.reload()).toBe('changed');
    expect(src.get()!.cert.equals(first.cert)).toBe(false);
  });

  it('at start, a missing file or a mismatched pair is a config error naming api.client_cert_file; none set is no certificate', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'spoolship-identity-'));
    dirs.push(dir);
    const ca = makeCa(dir, 'ca');
    const a = makeClientCert(dir, ca, 'a');
    const b = makeClientCert(dir, ca, 'b');
    await expect(ClientIdentitySource.create(path.join(dir, 'absent.pem'), a.keyFile)).rejects.toBeInstanceOf(ConfigError);
    await expect(ClientIdentitySource.create(a.certFile, b.keyFile)).rejects.toThrow(/api\.client_cert_file/);
    expect((await ClientIdentitySource.create(null, null)).get()).toBeNull();
    expect((await ClientIdentitySource.create(a.certFile, null)).get()).toBeNull();
  });
});
