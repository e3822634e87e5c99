/** One CSV record with the line of the file it starts on (1 = the first line). */
export interface CsvRecord {
  line: number;
  fields: string[];
}

/** Longest field, in UTF-16 code units: far above any value the server accepts (255 characters). */
export const MAX_CSV_FIELD = 64 * 1024;
/** Most fields in one record: the import knows nine columns; this leaves room to spare. */
export const MAX_CSV_FIELDS = 64;

const LF = 0x0a;
const CR = 0x0d;

/**
 * The input has more records, or more fields in all its records, than the caller allows; `line` is
 * where the record that goes over starts.
 */
export class CsvLimitError extends Error {
  constructor(
    readonly what: 'records' | 'fields',
    readonly line: number,
    readonly limit: number,
  ) {
    super(`line ${line}: more than ${limit} ${what}`);
  }
}

/**
 * RFC 4180 CSV: comma-separated fields, `"`-quoted fields may hold commas, line breaks and `""`
 * for a quote; LF, CRLF or CR line ends (a line break inside a quoted field counts as a line too);
 * a leading byte-order mark and blank lines are skipped.
 * Lenient where RFC 4180 is strict: text after a closing quote joins the field (`"ab"cd` is
 * `abcd`), and a quote inside an unquoted field is kept (`z"q"`).
 *
 * Fields are sliced out of the input, never built a character at a time, so memory stays close to
 * the size of the file; a field over MAX_CSV_FIELD or a record over MAX_CSV_FIELDS is refused
 * with its line. The records and fields themselves are what grows faster than the file (a
 * one-character line becomes an object and an array, an empty field a slot of that array), so
 * parsing stops with CsvLimitError at the first record over `maxRecords`, or that takes the fields
 * of all records over `maxFields`. Every character is looked at a bounded number of times: the
 * time grows with the size of the input, never with its square.
 */
export function parseCsv(text: string, maxRecords = Infinity, maxFields = Infinity): CsvRecord[] {
  const records: CsvRecord[] = [];
  const input = text.replace(/^\uFEFF/, '');
  const n = input.length;
  let fields: string[] = [];
  let pieces: string[] = [];
  let fieldLength = 0;
  let fieldCount = 0;
  let line = 1;
  let start = 1;
  let touched = false;
  const add = (piece: string) => {
    if (piece === '') return;
    fieldLength += piece.length;
    if (fieldLength > MAX_CSV_FIELD) {
      throw new Error(`line ${start}: a field is longer than ${MAX_CSV_FIELD} characters`);
    }
    pieces.push(piece);
  };
  const endField = () => {
    if (fields.length >= MAX_CSV_FIELDS) {
      throw new Error(`line ${start}: a record has more than ${MAX_CSV_FIELDS} fields`);
    }
    fields.push(pieces.length === 1 ? pieces[0]! : pieces.join(''));
    pieces = [];
    fieldLength = 0;
  };
  const endRecord = () => {
    endField();
    if (touched) {
      if (records.length >= maxRecords) throw new CsvLimitError('records', start, maxRecords);
      fieldCount += fields.length;
      if (fieldCount > maxFields) throw new CsvLimitError('fields', start, maxFields);
      records.push({ line: start, fields });
    }
    fields = [];
    touched = false;
  };
  // The line breaks of a quoted field, counted within the field alone: a search for the next LF
  // would run on past it, to the end of the input when lines end in CR, for every quoted field.
  const countLines = (from: number, to: number) => {
    for (let k = from; k < to; k++) {
      const c = input.charCodeAt(k);
      if (c === LF || (c === CR && input.charCodeAt(k + 1) !== LF)) line++;
    }
  };
  let i = 0;
  while (i < n) {
    const c = input[i]!;
    if (c === '"' && fieldLength === 0) {
      touched = true;
      i++;
      for (;;) {
        const q = input.indexOf('"', i);
        if (q === -1) throw new Error(`line ${start}: a quoted field is not closed`);
        countLines(i, q);
        add(input.slice(i, q));
        if (input[q + 1] === '"') {
          add('"');
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
    } else if (c === ',') {
      endField();
      touched = true;
      i++;
    } else if (c === '\n' || c === '\r') {
      i += c === '\r' && input[i + 1] === '\n' ? 2 : 1;
      endRecord();
      line++;
      start = line;
    } else {
      let j = i + 1;
      while (j < n && input[j] !== ',' && input[j] !== '\n' && input[j] !== '\r') j++;
      add(input.slice(i, j));
      touched = true;
      i = j;
    }
  }
  endRecord();
  return records;
}
