/** One CSV record with the line of the file it starts on (1 = the first line). */
export interface CsvRecord {
  line: number;
  fields: string[];
}

/** Longest field, in UTF-16 code units: far above any value the server accepts (255 characters). */
export const MAX_CSV_FIELD = 64 * 1024;
/** Most fields in one record: the import knows a handful of columns. */
export const MAX_CSV_FIELDS = 1024;

/** The input has more records than the caller allows; `line` is where the first one too many starts. */
export class TooManyRecordsError extends Error {
  constructor(
    readonly line: number,
    readonly limit: number,
  ) {
    super(`line ${line}: more than ${limit} records`);
  }
}

/**
 * RFC 4180 CSV: comma-separated fields, `"`-quoted fields may hold commas, line breaks and `""`
 * for a quote; LF or CRLF line ends; a leading byte-order mark and blank lines are skipped.
 * Lenient where RFC 4180 is strict: text after a closing quote joins the field (`"ab"cd` is
 * `abcd`), and a quote inside an unquoted field is kept (`z"q"`).
 *
 * Fields are sliced out of the input, never built a character at a time, so memory stays close to
 * the size of the file; a field over MAX_CSV_FIELD or a record over MAX_CSV_FIELDS is refused
 * with its line. The records themselves are what grows faster than the file (a one-character line
 * becomes an object and an array), so parsing stops with TooManyRecordsError at the first record
 * over `maxRecords`.
 */
export function parseCsv(text: string, maxRecords = Infinity): CsvRecord[] {
  const records: CsvRecord[] = [];
  const input = text.replace(/^\uFEFF/, '');
  const n = input.length;
  let fields: string[] = [];
  let pieces: string[] = [];
  let fieldLength = 0;
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
      if (records.length >= maxRecords) throw new TooManyRecordsError(start, maxRecords);
      records.push({ line: start, fields });
    }
    fields = [];
    touched = false;
  };
  const countLines = (from: number, to: number) => {
    for (let k = input.indexOf('\n', from); k !== -1 && k < to; k = input.indexOf('\n', k + 1)) line++;
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
