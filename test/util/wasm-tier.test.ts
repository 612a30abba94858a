// undici's HTTP/1.1 parser (llhttp) is WebAssembly; V8 re-compiles hot
// WebAssembly functions with its optimizing compiler on a background thread,
// which for llhttp took ~35 MB of compiler memory at once (bench/README.md,
// finding 35). keepWasmInBaselineTier() keeps WebAssembly in the baseline
// tier, and the agent calls it when it loads undici's parts
// (both in src/net/undici-parts.ts), before its first connection compiles llhttp (on
// node's command line instead, a V8 flag made Node reject the code cache of
// its own modules: finding 40). Checked in a child node with V8's test
// functions (--allow-natives-syntax): a hot WebAssembly function is tiered up
// within the same work without it, and stays in the baseline tier with it,
// after 200 million loop iterations: enough to spend the largest tiering
// budget V8 takes (2^31-1, set at run time here before; it only delayed the
// re-compilation, to the 5th of these rounds on Node 24).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// The built module (test/global-setup.ts builds before any test).
const MODULE = pathToFileURL(path.resolve('build/tsc/net/undici-parts.js')).href;

// (func (export "sum") (param i32) (result i32) (local i32)
//   (loop (local.set 1 (i32.add (local.get 1) (local.get 0)))
//         (br_if 0 (local.tee 0 (i32.sub (local.get 0) (i32.const 1)))))
//   (local.get 1))
const WASM = [
  0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 1, 127, 1, 127, 3, 2, 1, 0, 7, 7, 1, 3, 115, 117, 109, 0, 0, 10, 27, 1, 25, 1, 1, 127, 3, 64, 32, 1, 32, 0, 106, 33, 1,
  32, 0, 65, 1, 107, 34, 0, 13, 0, 11, 32, 1, 11,
];

const PROBE = `
const [moduleUrl, keep] = process.argv.slice(1);
if (keep === 'keep') (await import(moduleUrl)).keepWasmInBaselineTier();
if (keep === 'undici') await (await import(moduleUrl)).loadUndiciParts();
const sum = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(${JSON.stringify(WASM)}))).exports.sum;
// WebAssembly is compiled lazily: at its first call, by the baseline compiler.
sum(1);
const before = %IsLiftoffFunction(sum);
let rounds = 0;
// 20 rounds of 1,000 calls of 10,000 iterations; V8's default tiering budget
// is spent within the first round. Each round yields so that
// a finished background compilation is installed.
for (; rounds < 20 && %IsLiftoffFunction(sum); rounds++) {
  for (let i = 0; i < 1000; i++) sum(10000);
  await new Promise((r) => setTimeout(r, 1));
}
console.log(JSON.stringify({ before, baseline: %IsLiftoffFunction(sum), rounds }));
`;

interface Probe {
  /** Compiled by the baseline compiler at its first call. */
  before: boolean;
  /** Still baseline code after the rounds. */
  baseline: boolean;
  rounds: number;
}

function probe(how: 'default' | 'keep' | 'undici'): Probe {
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', PROBE, MODULE, how], { encoding: 'utf8' });
  return JSON.parse(out) as Probe;
}

describe('WebAssembly stays in the baseline tier', () => {
  it("without the setting a hot function is re-compiled by V8's optimizing tier (the probe sees it)", () => {
    const p = probe('default');
    expect(p.before).toBe(true);
    expect(p.baseline).toBe(false);
    expect(p.rounds).toBeLessThan(20);
  });

  it('with keepWasmInBaselineTier() the same work leaves it in the baseline tier', () => {
    expect(probe('keep')).toEqual({ before: true, baseline: true, rounds: 20 });
  });

  it("loading undici's parts for the agent's requests sets it, before any connection compiles the parser", () => {
    expect(probe('undici')).toEqual({ before: true, baseline: true, rounds: 20 });
  });
});
