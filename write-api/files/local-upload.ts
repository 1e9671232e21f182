import busboy from 'busboy';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Transform, type Readable } from 'node:stream';
import { commonErrors, isDomainError } from '../../domain/shared/errors';
import { filesErrors } from '../../domain/files/errors';
import { filesContext } from '../../commands/files/context';
import { verifyLocalPost } from '../../infra/objects/local-signature';
import type { Kernel } from '../../infra/kernel';
import { drainRest } from '../../infra/http/drain';
import { BYTES, multipartBody } from '../../infra/http/operation-docs';
import { z } from 'zod';

/**
 * The local object store's form uploads (`npm start` without S3): what S3 does with a presigned
 * POST, done here — the form's fields must come before the file and carry a signature over key,
 * type, size range and expiry (infra/objects/local-signature.ts), the size is enforced while the
 * file streams into the store, and success is 204 as on S3. With S3 configured this route is 404:
 * uploads go to S3 itself.
 */
const formProblem = (message: string) => commonErrors.validation([{ field: 'body', message, code: 'INVALID_FORM' }]);

const receive = (kernel: Kernel, request: FastifyRequest, body: Readable): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const ctx = filesContext(kernel);
    const secret = kernel.engines.secrets.key('objects.presign.v1').toString('base64');
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: request.headers, limits: { files: 1, fields: 10, fieldSize: 4096 } });
    } catch {
      reject(formProblem('a multipart/form-data body is required'));
      return;
    }
    const fields: Record<string, string> = {};
    let stored: Promise<void> | null = null;
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      body.unpipe(parser);
      reject(isDomainError(error) ? error : formProblem('the form is malformed or ended early'));
    };
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      // busboy destroys a file stream with an error when the form ends inside it: every part,
      // read or skipped, has a listener, or that error would end the process
      stream.on('error', (error) => fail(error));
      if (name !== 'file' || stored) return void stream.resume();
      const check = verifyLocalPost(secret, fields, kernel.clock.now().getTime());
      if (!check.valid || !check.policy) {
        stream.resume();
        return fail(filesErrors.linkInvalid(check.valid ? 'bad-signature' : check.reason));
      }
      const policy = check.policy;
      let bytes = 0;
      const bounded = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done(bytes > policy.maxBytes ? filesErrors.payloadTooLarge('document', policy.maxBytes) : null, chunk);
        },
      });
      // The refusal (413) is this transform's error: it can come before the store starts reading
      // (the local store first makes its staging folder), so it is listened to from the start.
      bounded.on('error', fail);
      stream.on('error', (error) => bounded.destroy(error));
      stored = ctx.objects.put(policy.key, stream.pipe(bounded), { contentType: policy.contentType }).then(async () => {
        if (bytes < policy.minBytes) {
          await ctx.objects.delete(policy.key);
          throw formProblem(`the file must be at least ${policy.minBytes} bytes`);
        }
      });
      stored.catch(fail);
    });
    parser.on('error', fail);
    // a client that goes away mid-form: the parser would wait for the rest for ever
    body.on('error', fail);
    parser.on('close', () => {
      if (!stored) return fail(formProblem('a part named file is required, after the signed fields'));
      stored.then(() => {
        if (settled) return;
        settled = true;
        resolve();
      }, fail);
    });
    body.pipe(parser);
  });

const signed = (description: string) => ({ type: 'string', maxLength: 4096, description });
/** the form of POST /files/presign: its `fields`, as received, before the part `file` */
const LocalForm = multipartBody(
  'The `fields` of the presigned form, exactly as POST /v1/files/presign answered them, before the part `file`.',
  {
    key: signed('the object key'),
    'Content-Type': signed('the media type named at presign'),
    expires: signed('when the form expires (epoch seconds)'),
    min: signed('the least size in bytes'),
    max: signed('the greatest size in bytes (sizeBytes of the presign)'),
    signature: signed('the signature over the fields above'),
    file: { ...BYTES, description: 'the file, at most the presigned size' },
  },
  ['key', 'Content-Type', 'expires', 'min', 'max', 'signature', 'file'],
);

export const registerLocalUpload = (app: FastifyInstance, kernel: Kernel): void => {
  app.post(
    '/objects/local',
    {
      config: { access: 'public', streamBody: true, problems: [403, 413, 415], openapi: { requestBody: LocalForm } },
      schema: {
        summary: 'The upload target of presigned forms when objects are kept in a local folder (npm start)',
        consumes: ['multipart/form-data'],
        response: { 204: z.null().describe('stored (as S3 answers a presigned POST)') },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      if (filesContext(kernel).objects.kind !== 'local')
        throw commonErrors.notFound('Uploads go to the object store itself.');
      const body = request.bodyStream;
      if (!body) throw filesErrors.multipartRequired(request.headers['content-type']);
      try {
        await receive(kernel, request, body);
      } catch (error) {
        drainRest(request);
        throw error;
      }
      return reply.code(204).send();
    },
  );
};
