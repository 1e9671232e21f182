import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../infra/observability/logger';
import { duplicateKeys } from '../../support/json-keys';

const capture = () => {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'info',
    destination: {
      write: (line: string) => {
        lines.push(line.trim());
      },
    },
  });
  return { logger, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
};

describe('duplicateKeys (the check the log tests use)', () => {
  it('finds a key written twice in one object, at any depth, and nothing in a well-formed line', () => {
    expect(duplicateKeys('{"name":"a","x":{"k":1,"k":2},"name":"b","list":[{"k":1},{"k":2}]}')).toEqual([
      'x.k',
      'name',
    ]);
    expect(duplicateKeys('{"s":"a \\" \\\\ , } ] name","n":-1.5e3,"t":true,"z":null,"e":{},"a":[]}')).toEqual([]);
  });
});

describe('a JSON log line', () => {
  it("keeps a field named like one of the line's own (name, pid, time, level) under <key>Field, once", () => {
    const { logger, lines, parsed } = capture();
    logger.info({ name: 'money.wallets', pid: 7, time: 'soon', level: 'deep', applied: 3 }, 'projection rebuild');
    expect(lines.map(duplicateKeys)).toEqual([[]]);
    expect(parsed()[0]).toMatchObject({
      name: 'platform',
      nameField: 'money.wallets',
      pidField: 7,
      timeField: 'soon',
      levelField: 'deep',
      applied: 3,
      msg: 'projection rebuild',
      level: 30,
    });
  });

  it("keeps a field named like a child logger's binding once: dropped when equal, renamed when different", () => {
    const { logger, lines, parsed } = capture();
    const request = logger.child({ traceId: 'abc' });
    request.info({ traceId: 'abc', status: 200 }, 'same');
    request.child({ tenantId: 't1' }).info({ traceId: 'other', tenantId: 't2' }, 'different');
    expect(lines.map(duplicateKeys)).toEqual([[], []]);
    expect(parsed()[0]).toMatchObject({ traceId: 'abc', status: 200 });
    expect(parsed()[0]).not.toHaveProperty('traceIdField');
    expect(parsed()[1]).toMatchObject({ traceId: 'abc', traceIdField: 'other', tenantId: 't1', tenantIdField: 't2' });
  });

  it("takes an object's msg as the message when no message follows, and keeps errors as they are", () => {
    const { logger, lines, parsed } = capture();
    logger.info({ msg: 'from the object' });
    logger.info({ msg: 'field' }, 'message');
    logger.error(new Error('boom'));
    expect(lines.map(duplicateKeys)).toEqual([[], [], []]);
    expect(parsed().map((l) => [l.msg, l.msgField])).toEqual([
      ['from the object', undefined],
      ['message', 'field'],
      ['boom', undefined],
    ]);
    expect(parsed()[2]).toMatchObject({ err: { message: 'boom' } });
  });
});
