import { describe, expect, test } from '@jest/globals';
import { formatTable } from '../../src/cli/table.js';
import { terminalText } from '../../src/cli/terminal-text.js';

// C0 (with TAB, CR, LF), DEL, C1, bidi overrides and isolates: what a terminal acts on.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

describe('terminalText: values written to a terminal show controls instead of obeying them', () => {
  test('ESC, CR, LF, TAB, DEL, C1 CSI and bidi controls become \\uXXXX escapes', () => {
    const hostile = 'a\u001b[2Jb\rc\nd\te\u007ff\u009b31mg\u202eh\u2066i\u0085j';
    const shown = terminalText(hostile);
    expect(shown).not.toMatch(RAW);
    expect(shown).toBe('a\\u001b[2Jb\\u000dc\\u000ad\\u0009e\\u007ff\\u009b31mg\\u202eh\\u2066i\\u0085j');
    expect(terminalText('plain é ☃ \u{1F600}')).toBe('plain é ☃ \u{1F600}');
  });

  test('keepNewlines lets LF through (the CLI own line breaks) and escapes the rest', () => {
    expect(terminalText('one\ntwo\r\u001b]0;x\u0007', { keepNewlines: true })).toBe(
      'one\ntwo\\u000d\\u001b]0;x\\u0007',
    );
  });

  test('the escapes are JSON escapes: pretty JSON stays JSON with the same values', () => {
    const value = { name: 'zz\u009b31mRED\u007f\u202e', list: ['a\u2066'] };
    const shown = terminalText(JSON.stringify(value, null, 2), { keepNewlines: true });
    expect(shown).not.toMatch(/[\u007f-\u009f\u202e\u2066]/u);
    expect(JSON.parse(shown)).toEqual(value);
  });

  test('invisible characters are escaped: zero-width, soft hyphen, BOM, word joiner, tags, separators', () => {
    expect(terminalText('\u200balice')).toBe('\\u200balice');
    expect(terminalText('al\u00adi\u2060c\u2064e\ufeff')).toBe('al\\u00adi\\u2060c\\u2064e\\ufeff');
    // A tag character lies beyond U+FFFF: its escape is the JSON surrogate pair.
    expect(terminalText('alice\u{E0041}')).toBe('alice\\udb40\\udc41');
    expect(terminalText('a\u2028b\u2029c\u3164d\ufe0f')).toBe('a\\u2028b\\u2029c\\u3164d\\ufe0f');
  });

  test('ZWNJ and ZWJ stay between Persian or Indic letters and are escaped anywhere else', () => {
    const persian = '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645';
    const devanagari = '\u0915\u094d\u200d\u0937';
    expect(terminalText(persian)).toBe(persian);
    expect(terminalText(devanagari)).toBe(devanagari);
    expect(terminalText('ali\u200cce\u200d')).toBe('ali\\u200cce\\u200d');
    expect(terminalText('\u200c\u0645')).toBe('\\u200c\u0645');
  });

  test('spaces other than U+0020 and blank braille are escaped: `alice\\u00a0bob` does not pass for `alice bob`', () => {
    expect(terminalText('alice\u00a0bob')).toBe('alice\\u00a0bob');
    expect(terminalText('a\u2003b\u3000c\u202fd')).toBe('a\\u2003b\\u3000c\\u202fd');
    expect(terminalText('\u2800alice\u2800')).toBe('\\u2800alice\\u2800');
    expect(terminalText('alice bob')).toBe('alice bob');
  });

  test('a combining mark with no letter to sit on, and an invisible stacker with nothing to stack, are escaped', () => {
    expect(terminalText('alice\u1039')).toBe('alice\\u1039');
    expect(terminalText('\u0301alice')).toBe('\\u0301alice');
    expect(terminalText('a \u0301b')).toBe('a \\u0301b');
    expect(terminalText('admin\u094d\u200d')).toBe('admin\\u094d\\u200d');
    expect(terminalText('\u1000\u1039')).toBe('\u1000\\u1039');
    expect(terminalText('"\u0301x"', { keepNewlines: true })).toBe('"\\u0301x"');
  });

  test('marks on the letters of their script are shown: conjuncts, vowel signs, Myanmar stacking', () => {
    for (const name of [
      '\u0915\u094d\u0937',
      '\u0928\u092e\u0938\u094d\u0924\u0947',
      '\u0915\u093f\u0902',
      '\u1000\u1039\u1000',
      '\u0e01\u0e34',
    ]) {
      expect(terminalText(name)).toBe(name);
    }
  });

  test('a long run of marks is judged by the character before its first mark', () => {
    const marks = '\u0301'.repeat(20_000);
    expect(terminalText(`\u0915${marks}`)).toBe(`\u0915${marks}`);
    expect(terminalText(`a${marks}`)).toBe(`a${'\\u0301'.repeat(20_000)}`);
    // Two runs: the second sits on a space and is escaped, the first stays.
    expect(terminalText(`\u0915\u094d\u0301 \u0301\u094d`)).toBe('\u0915\u094d\u0301 \\u0301\\u094d');
  });

  test('--json output escapes them with JSON escapes and parses back to the same values', () => {
    const value = { name: '\u200balice\u{E0041}', other: ['al\u00adice', '\ufeffx'] };
    const shown = terminalText(JSON.stringify(value, null, 2), { keepNewlines: true });
    expect(shown).not.toMatch(/[\u200b\u00ad\ufeff]|\u{E0041}/u);
    expect(JSON.parse(shown)).toEqual(value);
  });

  test('formatTable holds no raw control and keeps one line per row', () => {
    const table = formatTable(
      ['ID', 'NAME'],
      [
        ['1', 'a\u001b[2Jb'],
        ['2', 'zz-nl\nFAKEID  fake-admin'],
        ['3', 'evil\rtrusted\u009b0m'],
      ],
      { width: 200 },
    );
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(table).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/u);
    expect(table.split('\n')).toHaveLength(4);
    expect(table).toContain('a\\u001b[2Jb');
  });
});
