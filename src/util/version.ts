// The package's version, for `spoolship --version` and spoolship_build_info.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** From the nearest package.json above this module (src/util/, or dist/ once bundled). */
export function version(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version: string };
      if (pkg.name === 'spoolship') return pkg.version;
    } catch {
      // no package.json here
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}
