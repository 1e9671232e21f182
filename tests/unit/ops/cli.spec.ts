import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from '../../../app/cli/commands';
import { describeError } from '../../../app/cli/errors';
import { commonErrors } from '../../../domain/shared/errors';

const refusal = (argv: string[]) => {
  try {
    parseCommandLine(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

describe('the platform command line', () => {
  it('knows the serve roles, and a projector by the projection it runs', () => {
    expect(parseCommandLine(['serve', 'gateway'])).toEqual({ command: 'serve', role: 'gateway' });
    expect(parseCommandLine(['serve', 'projector', 'audit.views'])).toEqual({
      command: 'serve',
      role: 'projector',
      projection: 'audit.views',
    });
    expect(refusal(['serve', 'gateways'])).toBe(
      'serve needs a role: gateway, write-api, read-api, workers, projector (got "gateways")',
    );
    expect(refusal(['serve', 'projector'])).toMatch(/^serve projector needs the name of a projection/);
    expect(refusal(['serve', 'gateway', 'extra'])).toMatch(/^serve gateway takes no further arguments/);
    expect(refusal(['migrations'])).toBe('unknown command "migrations"');
  });

  it('takes owner create only with an email address, normalised by trimming', () => {
    expect(parseCommandLine(['owner', 'create', '--email', ' Owner@Example.com ', '--password', 'p'])).toEqual({
      command: 'owner',
      action: 'create',
      email: 'Owner@Example.com',
      password: 'p',
    });
    expect(refusal(['owner', 'create', '--email', 'owner', '--password', 'p'])).toBe(
      'owner create: --email must be an email address such as owner@example.com (got "owner")',
    );
    expect(refusal(['owner', 'create', '--email', 'a@example.com'])).toBe('owner create needs --email and --password');
    expect(refusal(['owner', 'create', '--mail', 'a@example.com'])).toMatch(/Unknown option '--mail'/);
  });

  it('reads replay positions as offsets or ISO times, and refuses anything else', () => {
    expect(
      parseCommandLine(['replay', '--topic', 't', '--from-offset', '5', '--to', '2026-01-01T00:00:00Z', '--into', 'g']),
    ).toEqual({
      command: 'replay',
      topic: 't',
      from: { offset: 5 },
      to: { time: Date.parse('2026-01-01T00:00:00Z') },
      into: 'g',
    });
    expect(refusal(['replay', '--topic', 't', '--from-offset', 'x', '--into', 'g'])).toBe(
      '--from-offset needs a whole number (got "x")',
    );
    expect(refusal(['replay', '--topic', 't', '--from-time', 'yesterday', '--into', 'g'])).toBe(
      'not an ISO 8601 time: yesterday',
    );
  });
});

describe('a failure told to the person at the terminal', () => {
  it('is a sentence even when a library rejects with nothing or with an empty AggregateError', () => {
    expect(describeError(undefined)).toMatch(/^failed without a reason; run it again with LOG_LEVEL=debug/);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(describeError(new AggregateError([refused, refused], ''))).toBe('connect ECONNREFUSED 127.0.0.1:5432');
    expect(describeError(Object.assign(new Error(''), { code: 'EACCES' }))).toBe('failed with EACCES');
  });

  it('of a refusal is its detail and the fields at fault', () => {
    expect(
      describeError(
        commonErrors.validation(
          [{ field: 'password', message: 'Too short.' }],
          'The password does not meet the policy.',
        ),
      ),
    ).toBe('The password does not meet the policy. (password: Too short)');
  });
});
