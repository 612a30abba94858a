// What a SIGHUP reload reads before it stops the running pipeline: the
// files the new config names (docs/configuration.md "Reloading"). One that
// cannot be read (a token file being rotated, a certificate renewed
// halfway) rejects the reload as an invalid config does, and the old
// pipeline keeps running. Read only once the old pipeline had stopped, it
// left nothing to go back to: the old config named the same missing file,
// and the agent exited 1.
import type { Config } from '../config/types.js';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { ClientIdentitySource } from '../net/client-identity.js';
import { MAX_SECRET_FILE_BYTES, readRegularFile } from '../util/bounded-read.js';
import { tokenTextProblem } from '../sender/token.js';
import { existsSync } from 'node:fs';

export async function unreadableFiles(c: Readonly<Config>, opts: { skipMissing?: boolean } = {}): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  const files: Array<[string, string | null]> = [
    ['api.token_file', c.api.token_file],
    ['api.ca_file', c.api.ca_file],
    ['limits.redis_ca_file', c.limits.redis_ca_file],
  ];
  // check-config: a file not there yet is its warning (config/cross-checks.ts), not a problem.
  const absent = (file: string | null) => opts.skipMissing === true && file !== null && !existsSync(file);
  for (const [key, file] of files) {
    if (file === null || absent(file)) continue;
    const text = await readRegularFile(file, MAX_SECRET_FILE_BYTES).catch((err: NodeJS.ErrnoException) => {
      problems.push({ path: key, value: file, why: `cannot read it (${err.code ?? err.message}); create it or fix the path` });
      return null;
    });
    // What the token must be, as at start (sender/token.ts).
    const bad = key === 'api.token_file' && text !== null ? tokenTextProblem(text.toString('utf8').trim()) : null;
    if (bad) problems.push({ path: key, value: file, why: bad });
  }
  // The pair must also match: the same check as a start's.
  if (absent(c.api.client_cert_file) || absent(c.api.client_key_file)) return problems;
  await ClientIdentitySource.create(c.api.client_cert_file, c.api.client_key_file).catch((err: unknown) => {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  });
  return problems;
}
