// Number formatting and Markdown tables for the results.
import os from 'node:os';

export const f1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(1));
export const f0 = (x) => (x === null || x === undefined || Number.isNaN(x) ? '-' : Math.round(x).toLocaleString('en-US'));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

export function thin(list, n) {
  if (list.length <= n) return list;
  return Array.from({ length: n }, (_, i) => list[Math.round((i * (list.length - 1)) / (n - 1))]);
}

export function table(cols, rows) {
  const head = `| ${cols.map((c) => c[0]).join(' | ')} |\n|${cols.map((c) => (c[2] === 'l' ? '---' : '---:')).join('|')}|\n`;
  return head + rows.map((r) => `| ${cols.map((c) => c[1](r)).join(' | ')} |`).join('\n') + '\n';
}
