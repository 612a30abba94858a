// Test certificates for mutual TLS, made with the openssl CLI (as the
// emulator's own server certificate is): a CA, and client certificates
// signed by it. Everything goes under the test's own temp dir.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export interface TestCa {
  certFile: string;
  keyFile: string;
}

export interface ClientPair {
  certFile: string;
  keyFile: string;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export function makeCa(dir: string, name: string): TestCa {
  const certFile = path.join(dir, `${name}-ca.pem`);
  const keyFile = path.join(dir, `${name}-ca.key`);
  openssl(['req', '-x509', ...EC, '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=${name} test CA`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
  return { certFile, keyFile };
}

/** A client certificate (CN=`name`) and its key, signed by `ca`. */
export function makeClientCert(dir: string, ca: TestCa, name: string): ClientPair {
  const keyFile = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const certFile = path.join(dir, `${name}.pem`);
  const ext = path.join(dir, `${name}.ext`);
  openssl(['req', ...EC, '-keyout', keyFile, '-out', csr, '-subj', `/CN=${name}`]);
  execFileSync('sh', ['-c', `printf 'extendedKeyUsage=clientAuth\\n' > "$1"`, 'sh', ext]);
  openssl(['x509', '-req', '-in', csr, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial', '-out', certFile, '-days', '2', '-extfile', ext]);
  return { certFile, keyFile };
}
