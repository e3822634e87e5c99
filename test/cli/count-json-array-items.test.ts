import { describe, expect, test } from '@jest/globals';
import { countJsonArrayItems } from '../../src/cli/count-json-array-items.js';

describe('countJsonArrayItems', () => {
  test('counts the top-level elements of any JSON array as JSON.parse sees them', () => {
    const arrays = [
      '[]',
      ' [ ] ',
      '[{}]',
      '[1,"two",[3,4],{"a":[5,{"b":6}]},null,true]',
      // Commas, brackets, braces and escaped quotes inside strings belong to the string.
      '[{"name":"a,b]}","roleAttributes":["x\\",[","\\\\"]}, "],{" ]',
      '\n[\r\n\t{"name": "a"} ,\n {"name": "b"}\n]\n',
    ];
    for (const text of arrays) {
      expect(countJsonArrayItems(text)).toBe((JSON.parse(text) as unknown[]).length);
    }
  });

  test('a top level that is not an array counts 0', () => {
    expect(countJsonArrayItems('{"a":[1,2],"b":3}')).toBe(0);
    expect(countJsonArrayItems('"[1,2]"')).toBe(0);
    expect(countJsonArrayItems('')).toBe(0);
  });

  test('stops one element after the limit', () => {
    const text = `[${Array.from({ length: 50 }, (_, i) => `{"name":"n${i}"}`).join(',')}]`;
    expect(countJsonArrayItems(text)).toBe(50);
    expect(countJsonArrayItems(text, 50)).toBe(50);
    expect(countJsonArrayItems(text, 10)).toBe(11);
  });
});
