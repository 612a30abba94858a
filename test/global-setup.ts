import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Tests that spawn `dist/cli.js` must run the code under test, not a stale
// build: build once (tsc, then the esbuild bundle) before any test file starts.
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, ['scripts/build.mjs'], {
    cwd: root,
    stdio: 'inherit',
  });
}
