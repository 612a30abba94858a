#!/usr/bin/env node
// Entry point of the `spoolship` binary (package.json "bin").
import module from 'node:module';
import { main } from './cli/main.js';

// (`run` re-executes itself with its memory settings and thread pool once it
// has read its config: src/cli/memory.ts.)

// Node 22.1+ keeps compiled code in a cache under the temp dir: loading the
// `run` command's modules takes 90 instead of 120-170 ms on Node 24 (start to
// first request is a benchmark target). Node 20 has no such API; unwritable
// temp dirs just disable it. Commands load lazily, after this line.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// A reader that goes away (`spoolship dead-letter list --json | head -1`) is
// no error of ours: the rest of the output goes nowhere, the command
// finishes what it does (a purge is not cut short) and exits as it would.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

// State files (checkpoints, journals, the queue, dead letters: raw events)
// are the owner's alone whatever the umask: files 0600, directories 0700. A
// stricter umask set by a service manager stays.
process.umask(process.umask(0o077) | 0o077);

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
// `run` has closed or abandoned everything it owns when it returns (within
// shutdown_timeout_ms, or 5 s after a fatal error): a handle left open (a
// hung socket, a watcher) must not keep the process up past a supervisor's
// stop timeout. Logs are written synchronously, so nothing is lost.
if (process.argv[2] === 'run') process.exit(code);
