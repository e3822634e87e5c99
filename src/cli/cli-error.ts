/** A failure the user can act on: printed as one line `svc: <message>`, then exit with `exitCode`. */
export class CliError extends Error {
  override readonly name: string = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Wrong command line: exit code 2, like most Unix tools, so scripts can tell it from an API error. */
export class UsageError extends CliError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message, 2);
  }
}
