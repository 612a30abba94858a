#!/usr/bin/env node
// `npm run build`: type-check and compile with tsc (into build/tsc/), then
// bundle that output with esbuild into dist/: dist/cli.js plus chunks that
// load only when their command runs (the emulator, the Redis
// limiter, ...).
//
// Why a bundle: on Node 20 the `run` command's ~300 modules took ~130 ms to
// resolve, read and link before the first file was read, and ~5 MB more RSS
// than one file per command does (bench/README.md, finding 19). Left outside
// the bundle, resolved from node_modules at run time: the native zstd and CRC-32
// bindings, ioredis (loaded only with a Redis budget) and pino-pretty (only
// for pretty logs).
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const tscOut = path.join(root, 'build', 'tsc');
const dist = path.join(root, 'dist');

// `--if-stale` (npm start's prestart): build only when a source is newer than dist/.
// (Imported only then: the image's build copies build.mjs alone.)
if (process.argv.includes('--if-stale')) {
  const { staleReason } = await import('./stale.mjs');
  const reason = staleReason(root);
  if (reason === null) {
    console.error('dist/ is up to date with src/; not rebuilding (npm run build forces it)');
    process.exit(0);
  }
  console.error(`building dist/: ${reason}`);
}

rmSync(tscOut, { recursive: true, force: true });
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });

/**
 * prom-client's default process metrics require the OpenTelemetry API (51
 * modules, ~10 ms of start-up) for exemplars, which spoolship never enables.
 * The bundle gets a stand-in that fails loudly if that ever changes.
 */
const noOpenTelemetry = {
  name: 'no-opentelemetry',
  setup(b) {
    b.onResolve({ filter: /^@opentelemetry\/api$/ }, () => ({ path: 'opentelemetry-api', namespace: 'spoolship-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'spoolship-stub' }, () => ({
      contents: "const fail = () => { throw new Error('spoolship: prom-client exemplars need @opentelemetry/api, which the bundle leaves out (scripts/build.mjs)'); };\nmodule.exports = new Proxy({}, { get: fail });",
      loader: 'js',
    }));
  },
};

rmSync(dist, { recursive: true, force: true });
await build({
  plugins: [noOpenTelemetry],
  entryPoints: [path.join(tscOut, 'cli.js')],
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  external: ['@mongodb-js/zstd', '@mongodb-js/zstd/*', '@node-rs/crc32', 'ioredis', 'pino-pretty'],
  // The CommonJS packages in the bundle (undici, pino, prom-client, ...) call
  // require() for Node's built-ins; an ES module has no require of its own.
  banner: { js: "import { createRequire as __spoolshipCreateRequire } from 'node:module';\nconst require = __spoolshipCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
// Run as a program (`spoolship`, ./dist/cli.js), the file starts under
// /bin/sh, which execs node with the agent's memory settings, keeping the
// PID (src/cli/memory.ts); to node the second line is a string and a comment.
// (No other V8 flag there: one made Node reject its own code cache.)
const cliFile = path.join(dist, 'cli.js');
const cli = readFileSync(cliFile, 'utf8');
if (!cli.startsWith('#!/usr/bin/env node\n')) throw new Error('dist/cli.js does not start with the node shebang of src/cli.ts');
const launcher = [
  '#!/bin/sh',
  '":" //; case "$NODE_OPTIONS" in *max-semi-space-size*) s= ;; *) s=--max-semi-space-size=1 ;; esac; ' +
    // libuv's pool for compression.threads: auto (src/codec/threads.ts's
    // threadpoolSize of the CPUs: affinity, and a cgroup v2 quota at the
    // container's top), unless UV_THREADPOOL_SIZE is set; `run` re-executes
    // on Node >= 22.15 where its config wants another size (cgroup v1, a
    // fixed compression.threads).
    'if [ -z "$UV_THREADPOOL_SIZE" ]; then n=$(nproc 2>/dev/null) || n=1; { read q p < /sys/fs/cgroup/cpu.max; } 2>/dev/null && [ "$q" != max ] && [ "$p" -gt 0 ] 2>/dev/null && c=$(( (q + p - 1) / p )) && [ "$c" -lt "$n" ] && n=$c; n=$((n + 2)); [ "$n" -ge 4 ] || n=4; UV_THREADPOOL_SIZE=$n _SPOOLSHIP_POOL=$n; export UV_THREADPOOL_SIZE _SPOOLSHIP_POOL; fi; ' +
    'MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-1}" _SPOOLSHIP_REEXECUTED=1 exec node $s "$0" "$@"',
].join('\n');
writeFileSync(cliFile, `${launcher}\n${cli.slice('#!/usr/bin/env node\n'.length)}`);
// One line more at the top: the source map's generated lines move down by one.
const mapFile = `${cliFile}.map`;
const map = JSON.parse(readFileSync(mapFile, 'utf8'));
map.mappings = `;${map.mappings}`;
writeFileSync(mapFile, JSON.stringify(map));
chmodSync(cliFile, 0o755);
