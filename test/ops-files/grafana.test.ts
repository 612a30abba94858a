import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';

interface Target {
  refId: string;
  expr: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
}

describe('deploy/grafana/spoolship-dashboard.json', () => {
  const dash = JSON.parse(readFileSync('deploy/grafana/spoolship-dashboard.json', 'utf8')) as {
    uid: string;
    title: string;
    schemaVersion: number;
    templating: { list: Array<{ name: string; type: string }> };
    panels: Panel[];
  };
  const queryPanels = dash.panels.filter((p) => p.type !== 'row');
  const exprs = queryPanels.flatMap((p) => p.targets!.map((t) => t.expr));

  it('is an importable dashboard: unique panel ids, every query panel on the Prometheus variable and inside the 24-column grid', () => {
    expect(dash.uid).toBe('spoolship');
    expect(dash.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dash.templating.list.map((v) => v.name)).toEqual(['prometheus', 'instance', 'data_source']);
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
    for (const p of queryPanels) {
      expect(p.title.length, `panel ${p.id}`).toBeGreaterThan(3);
      expect(p.description?.length ?? 0, p.title).toBeGreaterThan(10);
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      expect(p.targets!.length, p.title).toBeGreaterThan(0);
      expect(new Set(p.targets!.map((t) => t.refId)).size, p.title).toBe(p.targets!.length);
      for (const t of p.targets!) {
        expect(t.datasource).toEqual({ type: 'prometheus', uid: '${prometheus}' });
        let depth = 0;
        for (const ch of t.expr) {
          depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
          expect(depth, t.expr).toBeGreaterThanOrEqual(0);
        }
        expect(depth, t.expr).toBe(0);
      }
    }
  });

  it('shows throughput, lag, the queue, retries by reason, parked reasons, quarantined rows, the in-flight limit and bytes', () => {
    const shows = (pattern: RegExp) => exprs.some((e) => pattern.test(e));
    expect(shows(/rate\(spoolship_lines_acked_total/)).toBe(true);
    expect(shows(/rate\(spoolship_bytes_sent_total/)).toBe(true);
    expect(shows(/spoolship_behind_bytes/)).toBe(true);
    expect(shows(/spoolship_ack_latency_seconds_bucket/)).toBe(true);
    expect(shows(/spoolship_queue_bytes/)).toBe(true);
    expect(shows(/sum by \(reason\) \(rate\(spoolship_retries_total/)).toBe(true);
    expect(shows(/max by \(reason\) \(spoolship_parked\{/)).toBe(true);
    expect(shows(/spoolship_rows_quarantined_total/)).toBe(true);
    expect(shows(/spoolship_in_flight_limit/)).toBe(true);
    expect(shows(/spoolship_in_flight_bytes/)).toBe(true);
  });

  it('has an instance (pod) variable that every query filters by, and that the Data Source list follows', () => {
    const instance = dash.templating.list.find((v) => v.name === 'instance') as unknown as { type: string; definition: string; multi: boolean; includeAll: boolean; allValue: string };
    expect(instance.type).toBe('query');
    expect(instance.definition).toBe('label_values(spoolship_build_info, instance)');
    expect([instance.multi, instance.includeAll, instance.allValue]).toEqual([true, true, '.*']);
    const dataSource = dash.templating.list.find((v) => v.name === 'data_source') as unknown as { definition: string };
    expect(dataSource.definition).toContain('instance=~"$instance"');
    for (const e of exprs) {
      for (const [sel] of e.matchAll(/\bspoolship_[a-z_]+(\{[^}]*\})?/g)) expect(sel, e).toContain('instance=~"$instance"');
    }
  });

  it('queries only metrics the agent exports, with their labels', async () => {
    const metrics = createMetrics();
    const text = await metrics.registry.metrics();
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)/gm)].map((m) => [m[1]!, m[2]!]));
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(spoolship_[a-z_]+)\b/g)].map((m) => m[1]!)));
    expect(used.size).toBeGreaterThan(10);
    for (const name of used) {
      const base = name.replace(/_(bucket|sum|count)$/, '');
      expect(types.has(name) || types.get(base) === 'histogram', `${name} is not exported`).toBe(true);
    }
    // A label a query groups or filters by must be one the metric has.
    const labelsOf = (name: string) => {
      const metric = (metrics.registry.getSingleMetric(name.replace(/_bucket$/, '')) as unknown as { labelNames: string[] } | undefined)!;
      return new Set([...metric.labelNames, 'instance', 'le']);
    };
    for (const e of exprs) {
      for (const [, name, filter] of e.matchAll(/\b(spoolship_[a-z_]+)\{([^}]*)\}/g)) {
        for (const [, label] of filter!.matchAll(/(\w+)=~?"/g)) expect(labelsOf(name!).has(label!), `${name} has no label ${label}`).toBe(true);
      }
      for (const [, by, inner] of e.matchAll(/by \(([^)]*)\) \((?:rate|increase)?\(?(spoolship_[a-z_]+)/g)) {
        for (const label of by!.split(',').map((s) => s.trim())) expect(labelsOf(inner!).has(label), `${inner} has no label ${label}`).toBe(true);
      }
    }
  });
});
