import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** a client certificate from a CA the server does not trust */
  strangerCert: string;
  strangerKey: string;
  remove(): void;
}

const openssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/**
 * Certificates for a mutual-TLS test, made at run time with openssl in a temporary folder (no
 * private key is ever committed): a CA, a server certificate for 127.0.0.1/localhost, a client
 * certificate signed by the CA, and one signed by a CA of its own.
 */
export const makeTestCertificates = (): TestCertificates => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-mtls-'));
  const file = (name: string) => join(dir, name);
  const ca = (name: string) =>
    openssl(
      dir,
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
    );
  const leaf = (name: string, signer: string, ext: string) => {
    writeFileSync(file(`${name}.ext`), ext);
    openssl(
      dir,
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${signer}.crt`,
      '-CAkey',
      `${signer}.key`,
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    );
  };
  ca('test-ca');
  ca('stranger-ca');
  leaf('server', 'test-ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'test-ca', 'extendedKeyUsage=clientAuth\n');
  leaf('stranger', 'stranger-ca', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    ca: file('test-ca.crt'),
    serverCert: file('server.crt'),
    serverKey: file('server.key'),
    clientCert: file('client.crt'),
    clientKey: file('client.key'),
    strangerCert: file('stranger.crt'),
    strangerKey: file('stranger.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
};
