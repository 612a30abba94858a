// Memory settings of the agent, without the user setting anything (README
// "Deployment"). Two settings halve a busy agent's resident memory, and
// neither can be changed once Node runs (bench/README.md, findings 14 and 20):
//
// - MALLOC_ARENA_MAX=1: glibc gives each thread that allocates (libuv's pool
//   compressing batches, reading files) an arena of its own; their free
//   memory stays resident. glibc reads the variable at the first malloc.
// - --max-semi-space-size=1 (MB): V8's young generation is sized when the
//   isolate starts (v8.setFlagsFromString later has no effect); a busy agent
//   allocates short-lived buffers quickly, and the default semi-spaces grow
//   to 16 MB each.
//
// They are applied before the agent runs, in the same process (one PID, as
// systemd, Docker and the state lock need: never a child that could outlive
// its parent):
// 1. `spoolship` (dist/cli.js run as a program) starts under /bin/sh, which
//    execs node with both (scripts/build.mjs writes those first two lines);
// 2. `node dist/cli.js run` on Node >= 22.15 re-executes itself in place with
//    process.execve (same PID), once its config is read: libuv's thread pool
//    is sized then as well (compression.threads, codec/threads.ts), also
//    under the launcher when its guess from the CPUs was not the size;
// 3. `node dist/cli.js run` on Node 20 cannot: the agent runs without them
//    and says so at start (memory_settings: false in the start log).
// A value the user set (MALLOC_ARENA_MAX, a semi-space size in NODE_OPTIONS
// or on node's command line) is kept.
//
// A third setting needs none of that: V8's heap growing factor, set at run
// time by the agent while its state is large (src/util/heap-growth.ts),
// unless node's command line gives one.
//
// A fourth keeps WebAssembly in V8's baseline compiler (keepWasmInBaselineTier
// in net/undici-parts.ts): undici parses answers with llhttp compiled to WebAssembly, and after
// a few hundred answers V8 re-compiled it with its optimizing compiler on a
// background thread, ~35 MB of compiler memory for ~300 ms: the peak of a busy
// agent (bench/README.md, finding 35). Answers are a few hundred bytes each, a
// handful a second: the baseline code parses them as well. It is set at run
// time, when the agent loads undici (net/undici-parts.ts), not on node's
// command line: a V8 flag there made Node reject the code cache of its own
// modules, ~0.08 s more of the main thread's start on Node 24 (finding 40).
import { accessSync, constants } from 'node:fs';
import { threadpoolOrigin } from '../codec/threads.js';

export const SEMI_SPACE_FLAG = '--max-semi-space-size=1';
export const ARENA_MAX = '1';
/** node was started with its own heap growing factor: the agent leaves it alone. */
export function ownHeapGrowth(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => a.startsWith('--heap-growing-percent'));
}

/** Both settings are in effect (or the user chose their own). */
export function memorySettingsApplied(env: NodeJS.ProcessEnv, execArgv: readonly string[]): boolean {
  const semi = execArgv.some((a) => a.startsWith('--max-semi-space-size')) || /--max-semi-space-size/.test(env.NODE_OPTIONS ?? '');
  return semi && env.MALLOC_ARENA_MAX !== undefined;
}

/**
 * What `run` still needs from a re-execution: the memory settings (unless
 * the launcher or an earlier re-execution applied them: _SPOOLSHIP_REEXECUTED=1;
 * not a SPOOLSHIP_* name, which would be taken for a config key) and libuv's
 * pool of `pool` threads (codec/threads.ts), unless the user set
 * UV_THREADPOOL_SIZE. Nothing when both are in place.
 */
export function reexecNeeds(env: NodeJS.ProcessEnv, execArgv: readonly string[], pool: number): { memory: boolean; pool: boolean } {
  return {
    memory: env._SPOOLSHIP_REEXECUTED !== '1' && !memorySettingsApplied(env, execArgv),
    pool: threadpoolOrigin(env) !== 'user' && env.UV_THREADPOOL_SIZE !== String(pool),
  };
}

/**
 * Re-execute this process in place with the memory settings and a libuv pool
 * of `pool` threads, where Node can (process.execve, Node >= 22.15) and
 * either is missing. Returns only when nothing is missing, or it cannot (or
 * failed). Called by `run` once its config is read (the pool follows
 * compression.threads), before it opens anything.
 */
export function reexecForRun(pool: number): void {
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => void }).execve;
  if (typeof execve !== 'function') return;
  const needs = reexecNeeds(process.env, process.execArgv, pool);
  if (!needs.memory && !needs.pool) return;
  // A failed execve aborts the process (Node cannot return from it): run as
  // we are when this user cannot execute node at its path (a binary under
  // another user's 0700 directory, started through a path that was allowed).
  if (!canExecute(process.execPath)) return;
  const semi = process.execArgv.some((a) => a.startsWith('--max-semi-space-size')) || /--max-semi-space-size/.test(process.env.NODE_OPTIONS ?? '');
  const env = { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? ARENA_MAX, _SPOOLSHIP_REEXECUTED: '1' };
  if (needs.pool) Object.assign(env, { UV_THREADPOOL_SIZE: String(pool), _SPOOLSHIP_POOL: String(pool) });
  const args = [process.execPath, ...(semi ? [] : [SEMI_SPACE_FLAG]), ...process.execArgv, ...process.argv.slice(1)];
  try {
    execve.call(process, process.execPath, args, env);
  } catch {
    // Not possible here (a seccomp policy, say): run as we are.
  }
}

/** This process's real user may execute `file` (every directory on its path searchable). */
function canExecute(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
