/**
 * Content a virus scanner cannot look into is not passed as clean: this inspector watches the bytes
 * on their way to the scanner for encrypted containers — a ZIP (Office documents and JARs are ZIPs
 * too) whose entries carry the encryption flag, a PDF with an /Encrypt dictionary, an OLE compound
 * file holding an EncryptedPackage (password-protected Office files). ZIP entries are followed
 * header by header from offset 0 (never searched for in the data, where a signature can occur by
 * chance); other archive formats are left to clamd (AlertEncrypted in its configuration).
 * It keeps a few dozen bytes across chunks and nothing else, whatever the size of the file.
 */
const ZIP_LOCAL = 0x04034b50;
const LOCAL_HEADER_BYTES = 30;
const PDF_MAGIC = Buffer.from('%PDF-');
const PDF_ENCRYPT = Buffer.from('/Encrypt');
const OLE_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const OLE_ENCRYPTED_PACKAGE = Buffer.from('EncryptedPackage', 'utf16le');
const CARRY = OLE_ENCRYPTED_PACKAGE.length;

export type EncryptedContainer = 'zip' | 'pdf' | 'office';

const formatOf = (head: Buffer): 'zip' | 'pdf' | 'ole' | 'other' => {
  if (head.readUInt32LE(0) === ZIP_LOCAL) return 'zip';
  if (head.subarray(0, 5).equals(PDF_MAGIC)) return 'pdf';
  if (head.subarray(0, 8).equals(OLE_MAGIC)) return 'ole';
  return 'other';
};

export class EncryptionInspector {
  private format: 'zip' | 'pdf' | 'ole' | 'other' | null = null;
  private result: EncryptedContainer | null = null;
  /** bytes read so far */
  private position = 0;
  /** the first bytes, until the format is known */
  private head: Buffer[] = [];
  /** ZIP: where the next local header starts (null once the chain cannot be followed) */
  private nextHeaderAt: number | null = 0;
  /** ZIP: bytes of the header being collected */
  private header: Buffer[] = [];
  /** PDF, OLE: the end of the previous chunk, for patterns split across chunks */
  private carry = Buffer.alloc(0);

  /** the container type found encrypted so far, or null */
  get found(): EncryptedContainer | null {
    return this.result;
  }

  push(chunk: Buffer): void {
    if (this.result) return;
    let bytes = chunk;
    if (this.format === null) {
      this.head.push(chunk);
      bytes = Buffer.concat(this.head);
      if (bytes.length < 8) return;
      this.head = [];
      this.format = formatOf(bytes); // the bytes held back while sniffing go on with this chunk
    }
    if (this.format === 'zip') this.followZip(bytes);
    else if (this.format === 'pdf' || this.format === 'ole') {
      const window = this.carry.length ? Buffer.concat([this.carry, bytes]) : bytes;
      if (this.format === 'pdf' && window.includes(PDF_ENCRYPT)) this.result = 'pdf';
      if (this.format === 'ole' && window.includes(OLE_ENCRYPTED_PACKAGE)) this.result = 'office';
      this.carry = Buffer.from(window.subarray(Math.max(0, window.length - CARRY)));
    }
    this.position += bytes.length;
  }

  /** reads each local header where the previous entry says it starts: flags bit 0 is encryption, bit 3 hides the sizes */
  private followZip(chunk: Buffer): void {
    let offset = 0;
    while (this.nextHeaderAt !== null && !this.result) {
      const at = this.nextHeaderAt - this.position;
      if (at >= chunk.length) return;
      const collected = this.header.reduce((n, b) => n + b.length, 0);
      const from = Math.max(at, offset, 0);
      this.header.push(chunk.subarray(from, from + LOCAL_HEADER_BYTES - collected));
      const header = Buffer.concat(this.header);
      if (header.length < LOCAL_HEADER_BYTES) return;
      this.header = [];
      offset = from + LOCAL_HEADER_BYTES - collected;
      if (header.readUInt32LE(0) !== ZIP_LOCAL) {
        this.nextHeaderAt = null;
        return;
      }
      const flags = header.readUInt16LE(6);
      if ((flags & 1) === 1) {
        this.result = 'zip';
        return;
      }
      if ((flags & 8) === 8) {
        this.nextHeaderAt = null;
        return;
      }
      this.nextHeaderAt +=
        LOCAL_HEADER_BYTES + header.readUInt16LE(26) + header.readUInt16LE(28) + header.readUInt32LE(18);
    }
  }
}
