// The npm package as users get it: the license package.json names ships as
// LICENSE in the tarball, and a tarball `npm pack` leaves in the checkout is
// never committed.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../fleet/agents.js';

describe('package', () => {
  it('LICENSE is the Apache 2.0 text package.json names, and npm pack ships it', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { license: string };
    expect(pkg.license).toBe('Apache-2.0');
    const text = readFileSync(path.join(ROOT, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\/\s+TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION/);
    expect(text).toContain('END OF TERMS AND CONDITIONS');
    // --ignore-scripts: the list of files only, without prepack's build.
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const [packed] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
    expect(packed!.files.map((f) => f.path)).toContain('LICENSE');
  });

  it('every docs/ page the CLI and README point to ships in the tarball', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const [packed] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
    const shipped = new Set(packed!.files.map((f) => f.path));
    // `spoolship emulator --help` says "see docs/emulator.md"; README links the rest.
    const pointed = new Set<string>();
    for (const file of ['src/cli/commands/emulator.ts', 'src/cli/commands/clusters.ts', 'README.md']) {
      for (const m of readFileSync(path.join(ROOT, file), 'utf8').matchAll(/docs\/[a-z-]+\.md/g)) pointed.add(m[0]);
    }
    expect(pointed.size).toBeGreaterThan(5);
    expect([...pointed].filter((p) => !shipped.has(p))).toEqual([]);
  });

  it('a tarball npm pack writes into the checkout is ignored by git', () => {
    const r = spawnSync('git', ['check-ignore', '-q', 'spoolship-0.1.0.tgz'], { cwd: ROOT });
    expect(r.status).toBe(0);
  });
});
