// The shape #34 set for src/: no circle in the import graph (type imports
// included: a circle of types still ties two files' changes together) and
// no file over 400 lines outside agent/ (the wiring). A new import that
// closes a circle, or a file that grows past the bound, fails here with
// the circle or the file named.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const MAX_LINES = 400;

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Each file's relative imports and re-exports, as source paths. */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const deps = [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)].map((m) => path.resolve(path.dirname(f), m[1]!.replace(/\.js$/, '.ts')));
    graph.set(
      f,
      deps.filter((d) => graph.has(d) || files.includes(d)),
    );
  }
  return graph;
}

function circles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, 'open');
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 'open') found.push([...stack.slice(stack.indexOf(d)), d].map((p) => path.relative(SRC, p)).join(' -> '));
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of graph.keys()) if (!state.has(n)) visit(n);
  return found;
}

describe('the shape of src/', () => {
  const files = sources();

  it('has no circle in its import graph', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(circles(importGraph(files))).toEqual([]);
  });

  it(`has no file over ${MAX_LINES} lines outside agent/`, () => {
    const long = files
      .filter((f) => !path.relative(SRC, f).startsWith(`agent${path.sep}`))
      .map((f) => ({ file: path.relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});
