// Errors the emulator raises at start-up. They extend SpoolshipError so the
// CLI dispatcher turns them into exit codes; callers branch on `code`.
//
// | code                                | exit | meaning                                         |
// |-------------------------------------|------|-------------------------------------------------|
// | SPOOLSHIP_ERR_EMULATOR_FAULTS       | 2    | the faults list does not follow the grammar     |
// | SPOOLSHIP_ERR_EMULATOR_OPTIONS      | 2    | an option is out of range (listen, rps, ...)    |
// | SPOOLSHIP_ERR_EMULATOR_TLS          | 1    | no certificate could be made (openssl missing)  |
// | SPOOLSHIP_ERR_EMULATOR_LISTEN       | 1    | the listen address could not be bound           |
import { EXIT_FAILURE, EXIT_USAGE, SpoolshipError } from '../errors.js';

export class FaultSpecError extends SpoolshipError {
  constructor(message: string) {
    super('SPOOLSHIP_ERR_EMULATOR_FAULTS', message, EXIT_USAGE);
  }
}

export class EmulatorOptionError extends SpoolshipError {
  constructor(message: string) {
    super('SPOOLSHIP_ERR_EMULATOR_OPTIONS', message, EXIT_USAGE);
  }
}

export class TlsUnavailableError extends SpoolshipError {
  constructor(message: string, cause?: unknown) {
    super('SPOOLSHIP_ERR_EMULATOR_TLS', message, EXIT_FAILURE, { cause });
  }
}

export class ListenError extends SpoolshipError {
  constructor(address: string, cause: unknown) {
    const why = (cause as { code?: string })?.code ?? (cause as Error)?.message ?? String(cause);
    super(
      'SPOOLSHIP_ERR_EMULATOR_LISTEN',
      `cannot listen on ${address} (${why}); pick another address, or port 0 for a free one`,
      EXIT_FAILURE,
      { cause },
    );
  }
}
