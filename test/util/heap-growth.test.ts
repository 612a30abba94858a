// V8's heap growth follows the size of the agent's state: a low factor only
// while it tracks many files (where garbage between full collections was the
// peak), V8's own choice otherwise (where a low factor only costs CPU).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, HeapGrowth, MANY_FILES } from '../../src/util/heap-growth.js';
import { ownHeapGrowth } from '../../src/cli/memory.js';
import { configFor, startAgent, startEmu, tempDir, waitFor } from '../pipeline/helpers.js';

describe('heap growth', () => {
  it('sets the low factor once the state tracks MANY_FILES, gives it back below, and sets nothing in between', () => {
    const set: string[] = [];
    const h = new HeapGrowth((f) => set.push(f));
    h.update(10);
    h.update(MANY_FILES - 1);
    expect(set, 'a small state: V8 keeps its own factor').toEqual([]);
    h.update(MANY_FILES);
    h.update(20_000);
    expect(set).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
    expect(h.percent).toBe(HEAP_GROWING_PERCENT);
    h.update(5);
    expect(set).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`, '--heap-growing-percent=0']);
    expect(h.percent).toBe(0);
  });

  it("node's own --heap-growing-percent is the user's", () => {
    expect(ownHeapGrowth(['--max-semi-space-size=1', '--heap-growing-percent=50'])).toBe(true);
    expect(ownHeapGrowth(['--max-semi-space-size=1'])).toBe(false);
  });

  it('the agent reports the files it follows on its tick: a spool of MANY_FILES + 100 files gets the low factor', async () => {
    const dir = await tempDir();
    const emu = await startEmu(dir, { validateRows: false });
    const config = configFor(dir, emu);
    const ds = path.join(config.spool.dir, 'ev');
    await mkdir(ds, { recursive: true });
    const n = MANY_FILES + 100;
    for (let i = 0; i < n; i++) await writeFile(path.join(ds, `f-${i}.ndjson`), `{"i":${i}}\n`);
    const set: string[] = [];
    const h = new HeapGrowth((f) => set.push(f));
    let most = 0;
    await startAgent(config, {
      heapGrowth: {
        update: (files) => {
          most = Math.max(most, files);
          h.update(files);
        },
      },
    });
    await waitFor(() => most >= n, `the agent to report ${n} files`, 30_000);
    expect(most).toBe(n);
    expect(set).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
  });
});

