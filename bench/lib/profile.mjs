// Summarizes a V8 .cpuprofile (node --cpu-prof): self time by function and by
// file, as Markdown. Enough to see where the agent's main thread goes; the
// threadpool (compression) does not appear in it, only the JS that waits on it.
import { readFileSync } from 'node:fs';

export function summarizeProfile(file, { top = 25, root = '' } = {}) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = p.timeDeltas;
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i];
    self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0));
  }
  const totalUs = dt.reduce((a, b) => a + b, 0);
  const fn = new Map();
  const byFile = new Map();
  for (const [id, us] of self) {
    const cf = byId.get(id).callFrame;
    const url = (cf.url || '(native)').replace(`file://${root}`, '').replace(/^.*node_modules\//, 'node_modules/');
    const name = `${cf.functionName || '(anonymous)'} ${url}${cf.lineNumber >= 0 ? `:${cf.lineNumber + 1}` : ''}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const f = cf.url ? url.split(':')[0] : cf.functionName.startsWith('(') ? cf.functionName : '(native)';
    byFile.set(f, (byFile.get(f) ?? 0) + us);
  }
  const pct = (us) => ((100 * us) / totalUs).toFixed(1);
  const rows = [...fn].sort((a, b) => b[1] - a[1]).slice(0, top);
  const files = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 15);
  let md = `Profile: ${(totalUs / 1e6).toFixed(2)} s of main-thread samples.\n\n| self ms | % | function |\n|---:|---:|---|\n`;
  for (const [n, us] of rows) md += `| ${(us / 1000).toFixed(0)} | ${pct(us)} | \`${n}\` |\n`;
  md += `\n| self ms | % | file / category |\n|---:|---:|---|\n`;
  for (const [n, us] of files) md += `| ${(us / 1000).toFixed(0)} | ${pct(us)} | \`${n}\` |\n`;
  return md;
}
