import { createDeflate } from 'node:zlib';
import sharp from 'sharp';

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes: Buffer): number => {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type: string, data: Buffer): Buffer => {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
};

/**
 * A decompression bomb: a valid PNG of side x side black pixels (1-bit grayscale) whose zlib data
 * is a few hundred kilobytes; decoded it is side² bytes or more (40,000² = 1.6 GB as 8-bit gray).
 * The image data is deflated row by row, so building it never holds the raw picture.
 */
export const pixelFloodPng = async (side: number): Promise<Buffer> => {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr.writeUInt8(1, 8); // bit depth 1
  ihdr.writeUInt8(0, 9); // grayscale
  const row = Buffer.alloc(1 + Math.ceil(side / 8)); // filter byte 0, then zero bits
  const deflate = createDeflate({ level: 9 });
  const compressed: Buffer[] = [];
  deflate.on('data', (data: Buffer) => compressed.push(data));
  const done = new Promise((resolve, reject) => {
    deflate.on('end', resolve);
    deflate.on('error', reject);
  });
  for (let y = 0; y < side; y += 1) {
    if (!deflate.write(row)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await done;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', Buffer.concat(compressed)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
};

/** a PNG signature and header followed by bytes that are no image data */
export const corruptPng = async (): Promise<Buffer> => {
  const good = await sharp({ create: { width: 200, height: 200, channels: 3, background: '#777' } })
    .png()
    .toBuffer();
  const broken = Buffer.from(good);
  broken.fill(0xab, 33); // everything after IHDR
  return broken;
};

export const solidPng = (width: number, height: number, background = '#48c'): Promise<Buffer> =>
  sharp({ create: { width, height, channels: 3, background } })
    .png()
    .toBuffer();

export const dimensionsOf = async (bytes: Buffer): Promise<{ width: number; height: number; format: string }> => {
  const meta = await sharp(bytes).metadata();
  return { width: meta.width, height: meta.height, format: meta.format };
};
