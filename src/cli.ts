#!/usr/bin/env node
// Entry point of the `spoolship` binary (package.json "bin").
import { main } from './cli/main.js';

const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
// Commands that keep the process alive (run, emulator) resolve only when they
// are done; the rest resolve at once. Let stdout drain, then leave with the code.
process.exitCode = code;
