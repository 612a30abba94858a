// Preloaded into the agent by hand (`node --import bench/lib/heap-preload.mjs
// dist/cli.js run ...`, with MALLOC_ARENA_MAX=1 and --max-semi-space-size=1
// as the launcher would set them) to see where it allocates: V8's sampling
// heap profiler, keeping the objects collected since (the default keeps only
// the live ones, which hides garbage). On SIGUSR2 it writes the functions
// that allocated most, by bytes, to BENCH_HEAP_OUT (bench/README.md finding 28).
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_HEAP_OUT ?? 'heap-top.txt';
const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable', () =>
  session.post('HeapProfiler.startSampling', { samplingInterval: 32768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }),
);
process.on('SIGUSR2', () => {
  session.post('HeapProfiler.stopSampling', (err, res) => {
    if (err) return;
    const bytes = new Map();
    const walk = (node) => {
      const f = node.callFrame;
      const where = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      if (node.selfSize) bytes.set(where, (bytes.get(where) ?? 0) + node.selfSize);
      for (const c of node.children) walk(c);
    };
    walk(res.profile.head);
    const top = [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 50);
    writeFileSync(out, top.map(([where, n]) => `${(n / 1e6).toFixed(1)} MB  ${where}`).join('\n') + '\n');
  });
});
