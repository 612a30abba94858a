// docs/metrics.md's table against the registry: a metric added without its
// line, or a line left after its metric went, fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';

describe('docs/metrics.md metrics table', () => {
  const doc = readFileSync('docs/metrics.md', 'utf8');
  // | `name`[, `name`] | label, label | meaning |
  const rows = [...doc.matchAll(/^\| (`spoolship_[^|]*)\|([^|]*)\|/gm)].flatMap((m) =>
    [...m[1]!.matchAll(/`(spoolship_[a-z_]+)`/g)].map((n) => ({ name: n[1]!, labels: m[2]!.split(',').map((l) => l.trim()).filter(Boolean).sort() })),
  );
  const registered = createMetrics().registry.getMetricsAsArray().filter((m) => m.name.startsWith('spoolship_')) as unknown as Array<{ name: string; labelNames: string[] }>;

  it('lists every registered spoolship_ metric, and only those', () => {
    expect(rows.length).toBeGreaterThan(20);
    expect(rows.map((r) => r.name).sort()).toEqual(registered.map((m) => m.name).sort());
  });

  it('gives each its labels', () => {
    for (const m of registered) expect(rows.find((r) => r.name === m.name)?.labels, m.name).toEqual([...m.labelNames].sort());
  });
});
