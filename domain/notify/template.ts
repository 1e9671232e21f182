import { commonErrors } from '../shared/errors';
import type { Decider } from '../shared/decider';
import { notifyErrors } from './errors';
import type { TemplateData, TemplateEvent, TemplateFormat } from './events';

/** {{variableName}}, spaces inside the braces allowed; names are identifiers, dotted paths allowed */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]{0,63})\s*\}\}/g;
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

export type VariableValue = string | number | boolean;

/** the variable names a text uses, in order of first use */
export const placeholdersOf = (...texts: string[]): string[] => {
  const names = new Set<string>();
  for (const text of texts) for (const m of text.matchAll(PLACEHOLDER)) names.add(m[1]!);
  return [...names];
};

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/**
 * A value placed in a subject (a mail header): line breaks and other control characters become a
 * space, so a value can never end the header and start another (header injection).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
export const headerSafe = (text: string): string => text.replace(/[\u0000-\u001f\u007f]+/g, ' ');

/** true when a text holds a line break or another control character a header must not carry */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
export const hasControlCharacters = (text: string): boolean => /[\u0000-\u001f\u007f]/.test(text);

export interface RenderableTemplate {
  subject: string;
  body: string;
  format: TemplateFormat;
  variables: readonly string[];
}

/**
 * Substitutes the supplied values. Every declared variable must be supplied (400
 * template-variable-missing naming the missing ones). Values are escaped for where they land: HTML
 * escaping in an HTML body, nothing in a text body (it is never interpreted), control characters
 * removed in the subject.
 */
export const renderTemplate = (
  t: RenderableTemplate,
  values: Readonly<Record<string, VariableValue>>,
  field = 'variables',
): { subject: string; body: string } => {
  const missing = t.variables.filter((name) => !Object.prototype.hasOwnProperty.call(values, name));
  if (missing.length) throw notifyErrors.templateVariableMissing(missing, field);
  const valueOf = (name: string): string => String(values[name]);
  return {
    subject: headerSafe(
      t.subject.replace(PLACEHOLDER, (whole, name: string) =>
        t.variables.includes(name) ? headerSafe(valueOf(name)) : whole,
      ),
    ),
    body: t.body.replace(PLACEHOLDER, (whole, name: string) => {
      if (!t.variables.includes(name)) return whole;
      return t.format === 'html' ? escapeHtml(valueOf(name)) : valueOf(name);
    }),
  };
};

/**
 * The variables a new template declares: those given, which must cover every placeholder of its
 * subject and body; the placeholders themselves when none are given.
 */
export const declaredVariables = (subject: string, body: string, given: readonly string[] | undefined): string[] => {
  const used = placeholdersOf(subject, body);
  if (given === undefined) return used;
  const undeclared = used.filter((name) => !given.includes(name));
  if (undeclared.length) {
    throw commonErrors.validation(
      undeclared.map((name) => ({
        field: 'variables',
        message: `the template uses {{${name}}}, which is not declared`,
        code: 'UNDECLARED_VARIABLE',
      })),
    );
  }
  return [...new Set(given)];
};

export type Template = { status: 'none' } | { status: 'active'; templateId: string; name: string };
export type TemplateCommand = { type: 'CreateTemplate'; data: TemplateData };

export const templateDecider: Decider<Template, TemplateCommand, TemplateEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_s, e) => ({ status: 'active', templateId: e.data.templateId, name: e.data.name }),
  decide: (c, s) => (s.status === 'none' ? [{ type: 'notify.template.created', data: c.data }] : []),
};

const ENTITIES: Record<string, string> = {
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
  '&nbsp;': ' ',
  '&amp;': '&',
};

/** a plain-text alternative of an HTML body: tags dropped (block ends as line breaks), the common entities decoded */
export const htmlToText = (html: string): string =>
  html
    .replace(/<(br|\/p|\/div|\/h[1-6]|\/li|\/tr)\b[^>]*>/gi, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(lt|gt|quot|#39|nbsp|amp);/g, (e) => ENTITIES[e] ?? e)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
