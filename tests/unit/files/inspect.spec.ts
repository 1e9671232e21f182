import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { EncryptionInspector } from '../../../domain/files/inspect';

/** a ZIP local file header (30 bytes) + name + data, flags as given */
const zipEntry = (name: string, data: Buffer, flags: number): Buffer => {
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(flags, 6);
  header.writeUInt32LE(data.length, 18);
  header.writeUInt32LE(data.length, 22);
  header.writeUInt16LE(Buffer.byteLength(name), 26);
  return Buffer.concat([header, Buffer.from(name), data]);
};

/** feeds the bytes in chunks of the given size */
const inspect = (bytes: Buffer, chunk = 7) => {
  const inspector = new EncryptionInspector();
  for (let at = 0; at < bytes.length; at += chunk) inspector.push(bytes.subarray(at, at + chunk));
  return inspector.found;
};

describe('the encryption inspector', () => {
  it('finds a ZIP whose second entry is encrypted, across chunk boundaries', () => {
    const zip = Buffer.concat([zipEntry('a.txt', Buffer.from('hello'), 0), zipEntry('b.txt', randomBytes(100), 1)]);
    expect(inspect(zip, 3)).toBe('zip');
    expect(inspect(zip, 1)).toBe('zip');
  });
  it('passes a plain ZIP, even when its data holds a ZIP signature with the flag set', () => {
    const decoy = zipEntry('inner', Buffer.alloc(10), 1);
    expect(inspect(Buffer.concat([zipEntry('a.bin', decoy, 0), zipEntry('b.txt', Buffer.from('x'), 0)]))).toBeNull();
  });
  it('finds an encrypted PDF and passes a plain one', () => {
    expect(inspect(Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer << /Root 1 0 R /Encrypt 5 0 R >>'))).toBe('pdf');
    expect(inspect(Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer << /Root 1 0 R >>'))).toBeNull();
  });
  it('finds a password-protected Office file (OLE with an EncryptedPackage)', () => {
    const ole = Buffer.concat([
      Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
      randomBytes(600),
      Buffer.from('EncryptedPackage', 'utf16le'),
      randomBytes(100),
    ]);
    expect(inspect(ole, 5)).toBe('office');
  });
  it('passes other content, random bytes included', () => {
    expect(inspect(randomBytes(200_000), 4096)).toBeNull();
    expect(inspect(Buffer.from('short'))).toBeNull();
  });
});
