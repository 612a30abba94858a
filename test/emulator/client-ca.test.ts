// --client-ca: with --tls the emulator requires a client certificate signed
// by the given CA, as a platform behind mutual TLS does; the handshake of a
// client without one, or with another CA's, fails before any request.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { EmulatorOptionError } from '../../src/emulator/index.js';
import { parseEmulatorArgs } from '../../src/cli/commands/emulator.js';
import { makeCa, makeClientCert } from '../support/pki.js';
import { ndjson, newAgent, postEvents, readStored, startEmu, tempDir } from './helpers.js';

describe('emulator --client-ca (mutual TLS)', () => {
  it('accepts a client certificate of the CA, refuses none and another CA\'s at the handshake', async () => {
    const dir = await tempDir();
    const ca = makeCa(dir, 'good');
    const other = makeCa(dir, 'other');
    const good = makeClientCert(dir, ca, 'agent');
    const wrong = makeClientCert(dir, other, 'stranger');
    const emu = await startEmu({ dataDir: dir, tls: true, clientCaFile: ca.certFile });
    const trust = await readFile(emu.caFile!);
    const withCert = async (pair: { certFile: string; keyFile: string } | null) =>
      newAgent({ connect: { ca: trust, ...(pair ? { cert: await readFile(pair.certFile), key: await readFile(pair.keyFile) } : {}) } });

    expect((await postEvents(emu, { body: ndjson(2) }, await withCert(good))).status).toBe(200);
    const none = await postEvents(emu, { body: ndjson(1, 2) }, await withCert(null)).catch((e: unknown) => e as { code?: string });
    expect(none).toMatchObject({ code: expect.stringMatching(/^(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ECONNRESET|UND_ERR_SOCKET)$/) });
    const stranger = await postEvents(emu, { body: ndjson(1, 2) }, await withCert(wrong)).catch((e: unknown) => e as { code?: string });
    expect(stranger).toMatchObject({ code: expect.stringMatching(/UNKNOWN_CA|ECONNRESET|UND_ERR_SOCKET/) });
    expect(await readStored(dir, 'events')).toBe(ndjson(2));
  });

  it('--client-ca without --tls, or a file that cannot be read, is refused at start', async () => {
    const dir = await tempDir();
    await expect(startEmu({ clientCaFile: `${dir}/ca.pem` })).rejects.toBeInstanceOf(EmulatorOptionError);
    await expect(startEmu({ tls: true, dataDir: dir, clientCaFile: `${dir}/missing.pem` })).rejects.toBeInstanceOf(EmulatorOptionError);
    expect(parseEmulatorArgs(['--tls', '--client-ca', 'ca.pem'], dir).clientCaFile).toBe(`${dir}/ca.pem`);
  });
});
