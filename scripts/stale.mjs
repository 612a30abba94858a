// Whether dist/ was built from the sources as they are now: `npm start`
// (prestart: `scripts/build.mjs --if-stale`) skips the ~20 s build when
// nothing it reads changed since dist/cli.js was written, which the build
// does last.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** What the build reads: the sources, the build script and the compiler and package settings. */
const INPUTS = ['src', 'scripts/build.mjs', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

function newestMtimeMs(file) {
  let stat;
  try {
    stat = statSync(file);
  } catch (err) {
    if (err.code === 'ENOENT') return 0;
    throw err;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs; // a deleted or renamed file changes its directory
  for (const entry of readdirSync(file)) newest = Math.max(newest, newestMtimeMs(path.join(file, entry)));
  return newest;
}

/** The first input newer than dist/cli.js, or null when dist/ is current. */
export function staleReason(root) {
  let built;
  try {
    built = statSync(path.join(root, 'dist', 'cli.js')).mtimeMs;
  } catch (err) {
    if (err.code === 'ENOENT') return 'dist/cli.js does not exist';
    throw err;
  }
  for (const input of INPUTS) {
    if (newestMtimeMs(path.join(root, input)) > built) return `${input} changed since dist/ was built`;
  }
  return null;
}
