import { execFile } from 'node:child_process';
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

  it('covers the agent down, not ready, parked, a growing backlog, behind without acknowledgements, dead letters, lost lines, quarantined rows and the limiter fallback', () => {
    const used = (metric: string) => rules.some((r) => r.expr.includes(metric));
    for (const m of ['up{', 'absent(up', 'spoolship_ready', 'spoolship_parked', 'spoolship_behind_bytes', 'spoolship_lines_dead_lettered_total', 'spoolship_lines_lost_total', 'spoolship_rows_quarantined_total', 'spoolship_lines_acked_total', 'spoolship_limiter_fallback']) {
      expect(used(m), m).toBe(true);
    }
    const rule = (name: string) => rules.find((r) => r.alert === name)!;
    expect(rule('SpoolshipNotReady').for).toBe('5m');
    // Behind growing while nothing is acknowledged, per Data Source and with no size threshold (a quiet outage is small).
    expect(rule('SpoolshipBehindWithoutAcknowledgements').expr).not.toMatch(/e6|e9/);
  });

  describe('promtool test rules test/ops-files/alerts.rules-test.yaml', () => {
    interface RuleTest {
      alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }>;
    }
    const spec = YAML.parse(readFileSync('test/ops-files/alerts.rules-test.yaml', 'utf8')) as { rule_files: string[]; tests: RuleTest[] };
    const cases = spec.tests.flatMap((t) => t.alert_rule_test);

    it('tests every rule both firing and not firing', () => {
      expect(spec.rule_files).toEqual(['../../config/alerts.yaml']);
      for (const r of rules) {
        expect(cases.some((c) => c.alertname === r.alert && c.exp_alerts.length > 0), `${r.alert} firing`).toBe(true);
        expect(cases.some((c) => c.alertname === r.alert && c.exp_alerts.length === 0), `${r.alert} not firing`).toBe(true);
      }
    });

    it('passes', async () => {
      const run = await new Promise<{ code: number | string; out: string }>((resolve) =>
        execFile('promtool', ['test', 'rules', 'test/ops-files/alerts.rules-test.yaml'], (err, stdout, stderr) =>
          resolve({ code: err ? ((err as NodeJS.ErrnoException).code ?? 1) : 0, out: stdout + stderr }),
        ),
      );
      if (run.code === 'ENOENT') throw new Error('promtool is not installed: apt-get install prometheus (README "Development")');
      expect(run.out).toMatch(/SUCCESS/);
      expect(run.code, run.out).toBe(0);
    });
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
