import { describe, expect, it } from '@jest/globals';
import { checkInput, MAX_NESTING } from './check-input.js';

const nested = (levels: number): unknown => {
  let value: unknown = {};
  for (let i = 1; i < levels; i++) value = i % 2 ? [value] : { a: value };
  return value;
};

describe('checkInput', () => {
  it('accepts text with TAB, LF and CR and nesting up to the limit', () => {
    expect(checkInput({ pem: '-----BEGIN\r\nabc\tdef\n', list: ['ü', 1, null, true] })).toBeUndefined();
    expect(checkInput(nested(MAX_NESTING))).toBeUndefined();
  });

  it('names the top-level member holding a control character, in a value or a nested key', () => {
    expect(checkInput({ name: 'a\u0000b' })).toEqual({ field: 'name', reason: expect.any(String) });
    expect(checkInput({ tags: { 'k\u001f': 'v' } })).toEqual({ field: 'tags', reason: expect.any(String) });
    expect(checkInput({ list: [['\u0007']] })?.field).toBe('list');
  });

  it('refuses unpaired UTF-16 surrogates, which jsonb cannot store, and accepts paired ones', () => {
    expect(checkInput(JSON.parse('{"configTypes":["\\ud800"]}'))?.field).toBe('configTypes');
    expect(checkInput(JSON.parse('{"tags":{"\\udc00":"v"}}'))?.field).toBe('tags');
    expect(checkInput({ name: 'emoji \u{1F600}' })).toBeUndefined();
  });

  it('never echoes a top-level member name that itself holds a control character', () => {
    expect(checkInput({ 'a\u0000': 'x' })).toEqual({ field: undefined, reason: expect.any(String) });
    expect(checkInput('raw\u0000text')).toEqual({ field: undefined, reason: expect.any(String) });
  });

  it('refuses nesting one level past the limit, and 100,000 levels without exhausting the stack', () => {
    expect(checkInput(nested(MAX_NESTING + 1))).toEqual({ reason: expect.stringMatching(/nested/) });
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    expect(checkInput(deep)).toEqual({ reason: expect.stringMatching(/nested/) });
  });
});
