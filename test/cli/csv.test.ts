import { describe, expect, jest, test } from '@jest/globals';
import { CsvLimitError, MAX_CSV_FIELD, MAX_CSV_FIELDS, parseCsv } from '../../src/cli/csv.js';

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

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
    const thrown = thrownBy(() => parseCsv(text, 3));
    expect(thrown).toBeInstanceOf(CsvLimitError);
    expect(thrown).toMatchObject({
      what: 'records',
      line: 6,
      limit: 3,
      message: 'line 6: more than 3 records',
    });
  });

  test('more fields in all records than the limit stop the parse at the record that goes over', () => {
    // Blank lines hold no fields; the header's count.
    const text = 'name,type\n\na,b\nc\n\nd,e,f\n';
    expect(parseCsv(text, Infinity, 8).map((r) => r.line)).toEqual([1, 3, 4, 6]);
    const thrown = thrownBy(() => parseCsv(text, Infinity, 7));
    expect(thrown).toBeInstanceOf(CsvLimitError);
    expect(thrown).toMatchObject({
      what: 'fields',
      line: 6,
      limit: 7,
      message: 'line 6: more than 7 fields',
    });
  });

  test('CR line ends: each character is searched once, and line breaks in quoted fields count', () => {
    // Quoted records ending in CR before a tail of 4 MiB: a search for the next LF from each quoted
    // field ran to the end of the input, 20,000 times over.
    const tail = `${'x'.repeat(MAX_CSV_FIELD)}\r`.repeat(64);
    const text = `name,roles\r"multi\rline","a\r\nb\nc"\r${'"a"\r'.repeat(20_000)}${tail}`;
    // String searches are the only part of the parse that can look past a field; each search's span
    // is from its start to what it finds (or to the end of the string).
    const indexOf = jest.spyOn(String.prototype, 'indexOf');
    let records;
    let searches: number;
    let searched = 0;
    try {
      records = parseCsv(text);
      const { calls, results, contexts } = indexOf.mock;
      searches = calls.length;
      calls.forEach(([needle, from], i) => {
        const found = results[i]!.value as number;
        searched += (found === -1 ? (contexts[i] as string).length : found + needle.length) - (from ?? 0);
      });
    } finally {
      indexOf.mockRestore();
    }
    expect(searches).toBeGreaterThan(20_000);
    expect(searched).toBeLessThanOrEqual(text.length);

    // Line 2's record spans lines 2 to 5 (a CR, then a CRLF and an LF inside its quoted fields).
    expect(records.slice(0, 3)).toEqual([
      { line: 1, fields: ['name', 'roles'] },
      { line: 2, fields: ['multi\rline', 'a\r\nb\nc'] },
      { line: 6, fields: ['a'] },
    ]);
    expect(records).toHaveLength(2 + 20_000 + 64);
    expect(records[20_001]).toEqual({ line: 20_005, fields: ['a'] });
    expect(records[20_002]!.line).toBe(20_006);
    expect(records.at(-1)!.line).toBe(20_005 + 64);
  });
});
