import { describe, expect, it } from 'vitest';
import { isDomainError } from '../../../domain/shared/errors';
import { checkUploadFields, uploadFields } from '../../../domain/files/fields';

const refusal = (fields: Record<string, string>, complete = true) => {
  try {
    checkUploadFields(fields, complete);
  } catch (error) {
    if (isDomainError(error)) return { suffix: error.suffix, fields: error.errors?.map((e) => e.field) };
    throw error;
  }
  return null;
};

describe('the text fields of an upload', () => {
  it('need a known bucket and an original name', () => {
    expect(refusal({ bucket: 'photos', originalName: 'a' })).toEqual({ suffix: 'bucket-invalid', fields: ['bucket'] });
    expect(refusal({})).toEqual({ suffix: 'validation-error', fields: ['bucket', 'originalName'] });
  });
  it('are checked as far as they arrived before the file: a missing one is not yet a problem', () =>
    expect(refusal({ bucket: 'assets' }, false)).toBeNull());
  it('take meta as a JSON object of at most 4 KB', () => {
    expect(refusal({ bucket: 'assets', originalName: 'a', meta: '[1]' })).toEqual({
      suffix: 'validation-error',
      fields: ['meta'],
    });
    expect(refusal({ bucket: 'assets', originalName: 'a', meta: `{"x":"${'a'.repeat(4090)}"}` })).toEqual({
      suffix: 'validation-error',
      fields: ['meta'],
    });
    expect(uploadFields({ bucket: 'assets', originalName: 'a', meta: '{"b":2,"a":1}' }).meta).toBe('{"b":2,"a":1}');
  });
  it('store a cleaned name', () =>
    expect(uploadFields({ bucket: 'assets', originalName: '../x\r\n.png' }).originalName).toBe('x.png'));
});
