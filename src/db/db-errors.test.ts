import { describe, expect, test } from '@jest/globals';
import { isDatabaseUnavailable } from './db-errors.js';

describe('isDatabaseUnavailable', () => {
  test('connection loss, shutdown, timeouts, pool exhaustion and deadlock victims are "unavailable"', () => {
    const cases: unknown[] = [
      Object.assign(new Error('deadlock detected'), { code: '40P01' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('x'), { code: '08006' }),
      new Error('select * from "identities" limit $1 - Connection terminated unexpectedly'),
      Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), {
        name: 'KnexTimeoutError',
      }),
      new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })]),
      new Error('wrapped', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) }),
    ];
    expect(cases.map((c) => isDatabaseUnavailable(c))).toEqual(cases.map(() => true));
  });

  test('bad input and bugs are not', () => {
    const cases: unknown[] = [
      Object.assign(new Error('duplicate key'), { code: '23505' }),
      Object.assign(new Error('invalid input syntax'), { code: '22P02' }),
      new TypeError('Cannot read properties of undefined'),
      undefined,
      'Connection terminated',
    ];
    expect(cases.map((c) => isDatabaseUnavailable(c))).toEqual(cases.map(() => false));
  });
});
