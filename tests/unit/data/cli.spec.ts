import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from '../../../app/cli/commands';

const refusal = (argv: string[]) => {
  try {
    parseCommandLine(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

describe('platform modules …', () => {
  it('registers from a folder, installs for a tenant, forces a version, purges only when told --yes', () => {
    expect(parseCommandLine(['modules', 'register', 'modules/crm'])).toEqual({
      command: 'modules',
      action: 'register',
      folder: 'modules/crm',
    });
    expect(parseCommandLine(['modules', 'install', 'crm', '--tenant', 't1'])).toEqual({
      command: 'modules',
      action: 'install',
      slug: 'crm',
      tenant: 't1',
    });
    expect(parseCommandLine(['modules', 'force-version', 'crm', '2'])).toEqual({
      command: 'modules',
      action: 'force-version',
      slug: 'crm',
      version: 2,
    });
    expect(parseCommandLine(['modules', 'purge', 'crm'])).toEqual({
      command: 'modules',
      action: 'purge',
      slug: 'crm',
      confirmed: false,
    });
    expect(parseCommandLine(['modules', 'purge', 'crm', '--yes'])).toEqual({
      command: 'modules',
      action: 'purge',
      slug: 'crm',
      confirmed: true,
    });
  });

  it('refuses what it cannot run, saying what is missing', () => {
    expect(refusal(['modules', 'install', 'crm'])).toBe('modules install needs --tenant <id>');
    expect(refusal(['modules', 'force-version', 'crm', 'two'])).toMatch(/^modules force-version needs <slug> <n>/);
    expect(refusal(['modules', 'register'])).toMatch(/^modules register needs the module's folder/);
    expect(refusal(['modules', 'explode'])).toMatch(/^modules needs list, register/);
  });
});
