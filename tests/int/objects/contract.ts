import { randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer, text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidObjectKeyError, ObjectNotFoundError, type ObjectStore } from '../../../infra/objects/port';

/** the bytes as a stream of uneven chunks, as an upload arrives */
const streamOf = (bytes: Buffer) =>
  Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += 777_777) yield bytes.subarray(at, at + 777_777);
    })(),
  );

/** The rules every ObjectStore adapter keeps; each adapter's spec runs this once. */
export const objectStoreContract = (name: string, open: () => Promise<ObjectStore>) => {
  describe(name, () => {
    let store: ObjectStore;
    // A fresh prefix per run, so leftovers of an earlier run cannot interfere.
    const prefix = `t-${randomUUID()}`;
    const key = (rest: string) => `${prefix}/${rest}`;

    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });

    describe('an empty store', () => {
      it('answers a ping', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it('has no head and no body for a key never written', async () => {
        expect(await store.head(key('missing'))).toBeNull();
        await expect(store.get(key('missing'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });

      it('accepts deleting a key never written', async () => {
        await expect(store.delete(key('missing'))).resolves.toBeUndefined();
      });

      it('refuses to copy from a key never written', async () => {
        await expect(store.copy(key('missing'), key('target'))).rejects.toBeInstanceOf(ObjectNotFoundError);
      });

      it.each(['../etc/passwd', '/absolute', 'a//b', 'a/./b', 'a/../../b', 'a\\b', 'a~data', 'with space', '', 'a/'])(
        'refuses the key %j before touching anything',
        async (bad) => {
          await expect(store.put(bad, Buffer.from('x'), { contentType: 'text/plain' })).rejects.toBeInstanceOf(
            InvalidObjectKeyError,
          );
          await expect(store.get(bad)).rejects.toBeInstanceOf(InvalidObjectKeyError);
          await expect(store.presignGet(bad, 60)).rejects.toBeInstanceOf(InvalidObjectKeyError);
        },
      );
    });

    describe('an object put from a buffer', () => {
      it('is read back byte for byte, with its size, type and etag', async () => {
        const k = key('invoices/2024-05.pdf');
        const body = Buffer.from('%PDF-1.7 hello');
        await store.put(k, body, { contentType: 'application/pdf' });

        expect(await buffer(await store.get(k))).toEqual(body);
        expect(await store.head(k)).toMatchObject({
          key: k,
          size: body.length,
          contentType: 'application/pdf',
          etag: expect.stringMatching(/^".+"$/),
        });
      });

      it('is replaced by a later put under the same key', async () => {
        const k = key('replaced.txt');
        await store.put(k, Buffer.from('first'), { contentType: 'text/plain' });
        await store.put(k, Buffer.from('second, longer'), { contentType: 'text/markdown' });
        expect(await text(await store.get(k))).toBe('second, longer');
        expect(await store.head(k)).toMatchObject({ size: 14, contentType: 'text/markdown' });
      });

      it('is gone after delete', async () => {
        const k = key('deleted.txt');
        await store.put(k, Buffer.from('bye'), { contentType: 'text/plain' });
        await store.delete(k);
        expect(await store.head(k)).toBeNull();
        await expect(store.get(k)).rejects.toBeInstanceOf(ObjectNotFoundError);
      });

      it('is duplicated by copy, leaving the source in place', async () => {
        const [from, to] = [key('original.json'), key('copies/copy.json')];
        await store.put(from, Buffer.from('{"v":1}'), { contentType: 'application/json' });
        await store.copy(from, to);
        expect(await text(await store.get(to))).toBe('{"v":1}');
        expect(await store.head(to)).toMatchObject({ contentType: 'application/json', size: 7 });
        expect(await text(await store.get(from))).toBe('{"v":1}');
      });
    });

    describe('an object of 26 bytes', () => {
      const k = key('ranges/alphabet.txt');
      beforeAll(async () => {
        await store.put(k, Buffer.from('abcdefghijklmnopqrstuvwxyz'), { contentType: 'text/plain' });
      });

      it('gives back only the bytes of a range, both ends included', async () => {
        expect(await text(await store.get(k, { range: { start: 2, end: 5 } }))).toBe('cdef');
        expect(await text(await store.get(k, { range: { start: 25, end: 25 } }))).toBe('z');
        expect(await text(await store.get(k, { range: { start: 0, end: 25 } }))).toBe('abcdefghijklmnopqrstuvwxyz');
      });

      it('refuses a range that ends before it starts', async () => {
        await expect(store.get(k, { range: { start: 5, end: 2 } })).rejects.toBeInstanceOf(RangeError);
      });
    });

    describe('an object moved', () => {
      it('is under the new key only, byte for byte', async () => {
        const [from, to] = [key('moving/from.bin'), key('moved/to.bin')];
        const body = randomBytes(1000);
        await store.put(from, body, { contentType: 'application/octet-stream' });
        await store.move(from, to);
        expect((await buffer(await store.get(to))).equals(body)).toBe(true);
        expect(await store.head(from)).toBeNull();
      });

      it('cannot be moved from a key never written', async () => {
        await expect(store.move(key('moving/missing'), key('moved/missing'))).rejects.toBeInstanceOf(
          ObjectNotFoundError,
        );
      });
    });

    describe('objects under a prefix', () => {
      const listed = (page: { objects: { key: string }[] }) => page.objects.map((o) => o.key.slice(prefix.length + 1));
      beforeAll(async () => {
        for (const name of ['c', 'a', 'b/1', 'b/2'])
          await store.put(key(`list/${name}`), Buffer.from(name), { contentType: 'text/plain' });
        await store.put(key('listing-not/x'), Buffer.from('x'), { contentType: 'text/plain' });
      });

      it('are listed in key order with their sizes, and nothing outside the prefix', async () => {
        const page = await store.list(key('list/'));
        expect(listed(page)).toEqual(['list/a', 'list/b/1', 'list/b/2', 'list/c']);
        expect(page.objects[1]).toMatchObject({ size: 3 });
        expect(page.more).toBe(false);
      });

      it('come in pages: limit, then the rest after the last key', async () => {
        const first = await store.list(key('list/'), { limit: 2 });
        expect([listed(first), first.more]).toEqual([['list/a', 'list/b/1'], true]);
        const rest = await store.list(key('list/'), { startAfter: first.objects[1]!.key });
        expect([listed(rest), rest.more]).toEqual([['list/b/2', 'list/c'], false]);
      });

      it('are none for a prefix nothing starts with', async () => {
        expect(await store.list(key('nothing-here/'))).toEqual({ objects: [], more: false });
      });
    });

    describe('a store whose bucket exists', () => {
      it('accepts ensureBucket again and keeps its objects', async () => {
        const k = key('kept.txt');
        await store.put(k, Buffer.from('kept'), { contentType: 'text/plain' });
        await store.ensureBucket();
        expect(await text(await store.get(k))).toBe('kept');
      });
    });

    describe('an object put from a stream larger than one upload part', () => {
      it('is read back byte for byte', async () => {
        const k = key('large.bin');
        const body = randomBytes(11 * 1024 * 1024 + 123);
        await store.put(k, streamOf(body), { contentType: 'application/octet-stream' });
        const back = await buffer(await store.get(k));
        expect(back.length).toBe(body.length);
        expect(back.equals(body)).toBe(true);
        expect((await store.head(k))?.size).toBe(body.length);
      });

      it('is read back byte for byte when it ends within the first part', async () => {
        const k = key('small-stream.txt');
        await store.put(k, streamOf(Buffer.from('tiny')), { contentType: 'text/plain' });
        expect(await text(await store.get(k))).toBe('tiny');
      });
    });
  });
};
