// A self-signed certificate for `localhost`, 127.0.0.1 and ::1, made with the
// openssl CLI (Node has no certificate builder). Only `tls: true` calls this,
// so the plain-HTTP emulator starts on hosts without openssl. The certificate
// is also the CA a client must trust (`caFile`).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TlsUnavailableError } from './errors.js';

const execFileAsync = promisify(execFile);
const CERT_DAYS = 825; // the longest validity Apple clients accept for TLS server certs

export interface TlsMaterial {
  certFile: string;
  cert: Buffer;
  key: Buffer;
  /** Removes a temp dir made for the files (no-op when under dataDir). */
  cleanup(): Promise<void>;
}

export async function makeSelfSignedCert(dataDir: string | null, opensslPath = 'openssl'): Promise<TlsMaterial> {
  let dir: string;
  let temp = false;
  if (dataDir !== null) {
    dir = path.join(dataDir, '_emulator_tls');
    await mkdir(dir, { recursive: true });
  } else {
    dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-emulator-tls-'));
    temp = true;
  }
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  try {
    await execFileAsync(opensslPath, [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', certFile, '-days', String(CERT_DAYS),
      '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      '-addext', 'basicConstraints=critical,CA:TRUE',
    ]);
  } catch (err) {
    if (temp) await rm(dir, { recursive: true, force: true });
    const code = (err as { code?: string }).code;
    const why = code === 'ENOENT' ? `the openssl CLI was not found (${opensslPath})` : `openssl failed: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}`;
    throw new TlsUnavailableError(`cannot make the emulator's TLS certificate: ${why}; install openssl or run the emulator without --tls`, err);
  }
  const [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
  return { certFile, cert, key, cleanup: async () => (temp ? rm(dir, { recursive: true, force: true }) : undefined) };
}
