import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { createMetrics } from '../../src/metrics/metrics.js';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

describe('config/alerts.yaml', () => {
  const doc = YAML.parse(readFileSync('config/alerts.yaml', 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
  const rules = doc.groups.flatMap((g) => g.rules);

  it('is a Prometheus rule file: groups with named rules, each with expr, severity and annotations', () => {
    expect(doc.groups.length).toBeGreaterThan(0);
    for (const r of rules) {
      expect(r.alert).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(typeof r.expr).toBe('string');
      expect(['page', 'warn']).toContain(r.labels.severity);
      expect(r.annotations.summary.length).toBeGreaterThan(10);
      expect(r.annotations.description.length).toBeGreaterThan(10);
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
      // Balanced parentheses: a cheap guard against a broken expression.
      let depth = 0;
      for (const ch of r.expr) {
        depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
        expect(depth).toBeGreaterThanOrEqual(0);
      }
      expect(depth).toBe(0);
    }
  });

  it('covers parked, a growing backlog, dead letters, quarantined rows, no acknowledgements and the limiter fallback', () => {
    const used = (metric: string) => rules.some((r) => r.expr.includes(metric));
    for (const m of ['spoolship_parked', 'spoolship_behind_bytes', 'spoolship_lines_dead_lettered_total', 'spoolship_rows_quarantined_total', 'spoolship_lines_acked_total', 'spoolship_limiter_fallback']) {
      expect(used(m), m).toBe(true);
    }
  });

  it('uses only metrics the agent exports', async () => {
    const metrics = createMetrics();
    const text = await metrics.registry.metrics();
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    const used = new Set(rules.flatMap((r) => [...r.expr.matchAll(/\b(spoolship_[a-z_]+)\b/g)].map((m) => m[1]!)));
    expect(used.size).toBeGreaterThan(5);
    for (const m of used) expect(exported.has(m), `${m} is not exported`).toBe(true);
  });
});
