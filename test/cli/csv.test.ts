import { describe, expect, test } from '@jest/globals';
import { MAX_CSV_FIELD, MAX_CSV_FIELDS, parseCsv, TooManyRecordsError } from '../../src/cli/csv.js';

describe('parseCsv', () => {
  test('quoted fields, doubled quotes, CRLF, a BOM, blank lines and multi-line fields', () => {
    const text = '\uFEFFname,roles\r\n"a,b","x ""q"" y"\r\n\r\nplain,"two\nlines"\nlast,\n';
    expect(parseCsv(text)).toEqual([
      { line: 1, fields: ['name', 'roles'] },
      { line: 2, fields: ['a,b', 'x "q" y'] },
      { line: 4, fields: ['plain', 'two\nlines'] },
      { line: 6, fields: ['last', ''] },
    ]);
  });

  test('lenient where documented: text after a closing quote joins, inner quotes are kept', () => {
    expect(parseCsv('"ab"cd,z"q",""\n')).toEqual([{ line: 1, fields: ['abcd', 'z"q"', ''] }]);
  });

  test('an unclosed quote names the line its record starts on', () => {
    expect(() => parseCsv('name\nok\n"open,\nmore\n')).toThrow('line 3: a quoted field is not closed');
  });

  test('a field longer than the limit is refused with its line, quoted or not', () => {
    const long = 'x'.repeat(MAX_CSV_FIELD + 1);
    expect(parseCsv(`a\n${'x'.repeat(MAX_CSV_FIELD)}\n`)[1]!.fields[0]).toHaveLength(MAX_CSV_FIELD);
    expect(() => parseCsv(`a\nb\n${long}\n`)).toThrow(
      `line 3: a field is longer than ${MAX_CSV_FIELD} characters`,
    );
    expect(() => parseCsv(`a\n"${long}"\n`)).toThrow(
      `line 2: a field is longer than ${MAX_CSV_FIELD} characters`,
    );
    // Doubled quotes count once each, and still add up.
    expect(() => parseCsv(`"${'""'.repeat(MAX_CSV_FIELD + 1)}"`)).toThrow('line 1: a field is longer');
  });

  test('a record with more fields than the limit is refused with its line', () => {
    expect(() => parseCsv(`a\n${','.repeat(MAX_CSV_FIELDS)}\n`)).toThrow(
      `line 2: a record has more than ${MAX_CSV_FIELDS} fields`,
    );
    expect(parseCsv(','.repeat(MAX_CSV_FIELDS - 1))[0]!.fields).toHaveLength(MAX_CSV_FIELDS);
  });

  test('more records than the limit stop the parse at the first one too many, with its line', () => {
    // Blank lines are no records; a quoted line break does not start one.
    const text = 'name\n\na\n"b\nc"\nd\ne\n';
    expect(parseCsv(text, 5).map((r) => r.line)).toEqual([1, 3, 4, 6, 7]);
    let thrown: unknown;
    try {
      parseCsv(text, 3);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(TooManyRecordsError);
    expect(thrown).toMatchObject({ line: 6, limit: 3, message: 'line 6: more than 3 records' });
  });
});
