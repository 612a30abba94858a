// A client certificate the server refuses must be named in the error
// outcome (so in the retry WARN and status's last error), not reported as
// a bare "other side closed": under TLS 1.3 the refusal comes after the
// client's handshake, with the connection's end (src/net/tls-failure.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { EventsClient } from '../../src/sender/http-client.js';
import { makeCa, makeClientCert, type ClientPair } from '../support/pki.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'spoolship-tls-cause-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const ca = makeCa(dir, 'platform');
  const other = makeCa(dir, 'other');
  const emu = await startEmulator({ listen: '127.0.0.1:0', tls: true, dataDir: dir, clientCaFile: ca.certFile });
  cleanups.push(() => emu.close());
  const post = async (pair: ClientPair | null, http2: boolean) => {
    const identity = pair ? { cert: readFileSync(pair.certFile), key: readFileSync(pair.keyFile) } : null;
    const c = new EventsClient({ baseUrl: emu.url, token: { get: () => emu.token }, wait: true, http2, caFile: emu.caFile, timeoutMs: 5000, maxConnections: 2, identity });
    cleanups.push(() => c.destroy());
    return c.post('ev', Buffer.from('{"a":1}\n'), null);
  };
  return { dir, ca, other, post };
}

describe('a refused client certificate keeps its cause', () => {
  for (const http2 of [false, true]) {
    it(`none presented: the server's alert by name (${http2 ? 'HTTP/2' : 'HTTP/1.1'})`, async () => {
      const { post } = await setup();
      expect(await post(null, http2)).toMatchObject({ kind: 'error', code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' });
    });

    it(`another CA's, closed without an alert: the message says the certificate was likely refused (${http2 ? 'HTTP/2' : 'HTTP/1.1'})`, async () => {
      const { dir, other, post } = await setup();
      const o = await post(makeClientCert(dir, other, 'stranger'), http2);
      expect(o).toMatchObject({ kind: 'error', code: 'UND_ERR_SOCKET', message: expect.stringContaining('refused the client certificate') });
    });
  }

  it('a certificate of the CA: answered', async () => {
    const { dir, ca, post } = await setup();
    expect(await post(makeClientCert(dir, ca, 'agent'), false)).toMatchObject({ kind: 'response', status: 200 });
  });
});
