import { describe, expect, test } from '@jest/globals';
import {
  countJsonArrayItems,
  JsonLimitError,
  type JsonArrayLimits,
} from '../../src/cli/count-json-array-items.js';

/** The JsonLimitError that counting `text` within `limits` throws. */
function limitError(text: string, limits: JsonArrayLimits): JsonLimitError {
  try {
    countJsonArrayItems(text, limits);
  } catch (err) {
    if (err instanceof JsonLimitError) return err;
    throw err;
  }
  throw new Error(`no limit exceeded by ${text}`);
}

describe('countJsonArrayItems', () => {
  test('counts the top-level elements of any JSON array as JSON.parse sees them', () => {
    const arrays = [
      '[]',
      ' [ ] ',
      '[{}]',
      '[1,"two",[3,[4]],{"a":[5,"}"],"b":6},null,true]',
      // Commas, brackets, braces and escaped quotes inside strings belong to the string.
      '[{"name":"a,b]}","roleAttributes":["x\\",[","\\\\"]}, "],{" ]',
      '\n[\r\n\t{"name": "a"} ,\n {"name": "b"}\n]\n',
    ];
    for (const text of arrays) {
      expect(countJsonArrayItems(text)).toBe((JSON.parse(text) as unknown[]).length);
    }
  });

  test('a top level that is not an array counts 0; an object there is refused', () => {
    expect(countJsonArrayItems('"[1,2]"')).toBe(0);
    expect(countJsonArrayItems('')).toBe(0);
    expect(limitError('{"a":[1,2],"b":3}', {})).toMatchObject({ limit: 'object', item: 0 });
  });

  test('refuses more elements than the limit at the first one too many', () => {
    const text = `[${Array.from({ length: 50 }, (_, i) => `{"name":"n${i}"}`).join(',')}]`;
    expect(countJsonArrayItems(text, { items: 50 })).toBe(50);
    expect(limitError(text, { items: 10 })).toMatchObject({ limit: 'items', message: 'more than 10 items' });
  });

  test('counts values at any depth, one row or many, and refuses more than the limit', () => {
    // 1 row + 2 member values + 3 elements; keys and the empty array hold none.
    const oneRow = '[ {"name": "x", "roleAttributes": [ "a" , [], 0 ]} ]';
    expect(countJsonArrayItems(oneRow, { values: 6 })).toBe(1);
    expect(limitError(oneRow, { values: 5 })).toMatchObject({ limit: 'values', item: 1 });
    // One row of a huge array counts like many rows: its elements are built just the same.
    const wide = `[{"name":"x"},{"name":"y","roleAttributes":[${'0,'.repeat(999)}0]}]`;
    expect(countJsonArrayItems(wide, { values: 1005 })).toBe(2);
    expect(limitError(wide, { values: 1004 })).toMatchObject({
      limit: 'values',
      item: 2,
      message: 'item 2: more than 1004 values',
    });
    expect(countJsonArrayItems('[0,[],{}]', { values: 3 })).toBe(3);
    expect(limitError('[0,[],{}]', { values: 2 })).toMatchObject({ limit: 'values', item: 3 });
  });

  test('refuses nesting deeper than the limit, and objects anywhere but as elements', () => {
    expect(countJsonArrayItems('[{"r":[1,"x"]},[[2]],3]', { depth: 3 })).toBe(3);
    expect(limitError('[{"name":"x"},{"e":[[]]}]', { depth: 3 })).toMatchObject({
      limit: 'depth',
      item: 2,
      message: 'item 2: arrays and objects nested more than 3 deep',
    });
    expect(limitError('[[[[[[0]]]]]]', { depth: 3 })).toMatchObject({ limit: 'depth', item: 1 });
    // An object of a row's value, or in an array element, could hold any number of keys.
    expect(limitError('[{"name":"x","e":[{},{}]}]', {})).toMatchObject({ limit: 'object', item: 1 });
    expect(limitError('[{"name":{"a":1}}]', {})).toMatchObject({ limit: 'object', item: 1 });
    expect(limitError('[1,[{}]]', {})).toMatchObject({ limit: 'object', item: 2 });
  });

  test('refuses a key not in the allowed set, escaped or not; strings that are values are no keys', () => {
    const keys = new Set(['name', 'roleAttributes']);
    const ok = '[{"name":"type","na\\u006de":"e","roleAttributes":["type"]}, {}]';
    expect(countJsonArrayItems(ok, { keys })).toBe(2);
    expect(limitError('[{"name":"x"},{"name":"y", "typ\\u0065":"user"}]', { keys })).toMatchObject({
      limit: 'key',
      item: 2,
      key: 'type',
      message: 'item 2: key type is not allowed',
    });
    // A key that is not a valid JSON string is left for JSON.parse to refuse.
    expect(countJsonArrayItems('[{"x\\q":1}]', { keys })).toBe(1);
  });
});
