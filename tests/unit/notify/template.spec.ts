import { describe, expect, it } from 'vitest';
import { isDomainError } from '../../../domain/shared/errors';
import {
  declaredVariables,
  escapeHtml,
  headerSafe,
  htmlToText,
  placeholdersOf,
  renderTemplate,
} from '../../../domain/notify/template';
import { redactConfig, REDACTED, secretsOf } from '../../../domain/notify/channel';

const suffixOf = (fn: () => unknown): { suffix: string; status: number; extensions?: Record<string, unknown> } => {
  try {
    fn();
  } catch (error) {
    if (isDomainError(error)) return { suffix: error.suffix, status: error.status, extensions: error.extensions };
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('placeholders', () => {
  it('finds {{name}} and {{ spaced }} once each, in order', () =>
    expect(placeholdersOf('Hi {{firstName}}', '{{ code }} and {{firstName}} and {{user.plan}}')).toEqual([
      'firstName',
      'code',
      'user.plan',
    ]));
  it('declares the placeholders when no variables are given', () =>
    expect(declaredVariables('{{a}}', '{{b}}', undefined)).toEqual(['a', 'b']));
  it('refuses a placeholder the declared variables leave out', () =>
    expect(suffixOf(() => declaredVariables('{{a}}', '{{b}}', ['a']))).toMatchObject({
      suffix: 'validation-error',
      status: 400,
    }));
});

describe('rendering', () => {
  const text = {
    subject: 'Hello {{name}}',
    body: 'Dear {{name}}, your code is {{code}}.',
    format: 'text' as const,
    variables: ['name', 'code'],
  };

  it('substitutes every declared variable', () =>
    expect(renderTemplate(text, { name: 'Ada', code: 42 })).toEqual({
      subject: 'Hello Ada',
      body: 'Dear Ada, your code is 42.',
    }));
  it('refuses missing variables with 400 template-variable-missing naming each', () => {
    const refusal = suffixOf(() => renderTemplate(text, { name: 'Ada' }));
    expect(refusal).toMatchObject({
      suffix: 'template-variable-missing',
      status: 400,
      extensions: { missing: ['code'] },
    });
    expect(suffixOf(() => renderTemplate(text, {})).extensions).toEqual({ missing: ['name', 'code'] });
  });
  it('HTML-escapes values in an HTML body, and only there', () => {
    const html = { ...text, body: '<p>Dear {{name}}</p>', format: 'html' as const };
    const evil = '<script>alert("x")</script> & \'co\'';
    expect(renderTemplate(html, { name: evil, code: 1 }).body).toBe(
      '<p>Dear &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</p>',
    );
    expect(renderTemplate(text, { name: evil, code: 1 }).body).toBe(`Dear ${evil}, your code is 1.`);
  });
  it('never lets a value break the subject into another header', () => {
    const { subject } = renderTemplate(text, { name: 'Ada\r\nBcc: everyone@example.test', code: 1 });
    expect(subject).toBe('Hello Ada Bcc: everyone@example.test');
    expect(subject).not.toMatch(/[\r\n]/);
  });
  it('leaves text that only looks like a placeholder of an undeclared variable alone', () =>
    expect(renderTemplate({ ...text, body: '{{name}} {{other}}', variables: ['name'] }, { name: 'A' }).body).toBe(
      'A {{other}}',
    ));
  it('does not substitute inside a substituted value (no second pass)', () =>
    expect(renderTemplate(text, { name: '{{code}}', code: 7 }).body).toBe('Dear {{code}}, your code is 7.'));
});

describe('escaping helpers', () => {
  it('escapes the five HTML characters', () =>
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;'));
  it('makes control characters spaces in header values', () =>
    expect(headerSafe('a\nb\rc\td\u0000e')).toBe('a b c d e'));
  it('gives an HTML body a text alternative', () =>
    expect(htmlToText('<p>Hi &lt;you&gt;</p><p>Bye &amp; thanks</p>')).toBe('Hi <you>\nBye & thanks'));
});

describe('channel config', () => {
  it("redacts the adapter's secret fields and anything named like a secret", () => {
    const config = { smtpUrl: 'smtps://u:p@mail:465', from: 'a@b.c', apiKey: 'k', webhookSecret: 's', region: 'eu' };
    expect(redactConfig(config, ['smtpUrl'])).toEqual({
      smtpUrl: REDACTED,
      from: 'a@b.c',
      apiKey: REDACTED,
      webhookSecret: REDACTED,
      region: 'eu',
    });
    expect(secretsOf(config, ['smtpUrl'])).toEqual({
      smtpUrl: 'smtps://u:p@mail:465',
      apiKey: 'k',
      webhookSecret: 's',
    });
  });
});
