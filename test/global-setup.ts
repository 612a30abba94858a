import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Tests that spawn `dist/cli.js` must run the code under test, not a stale
// build: compile once before any test file starts.
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
