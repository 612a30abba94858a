// Summarizes a V8 .cpuprofile (node --cpu-prof): self time by function, by
// file, and by call chain (a function and its three callers: `crc32 <- claim
// <- flushRun <- append` says which crc32), as Markdown. Enough to see where the agent's main thread goes; the
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
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const short = (cf) => `${cf.functionName || '(anonymous)'}${cf.url ? ` ${cf.url.split('/').pop()}:${cf.lineNumber + 1}` : ''}`;
  const chains = new Map();
  for (const [id, us] of self) {
    const cf = byId.get(id).callFrame;
    const url = (cf.url || '(native)').replace(`file://${root}`, '').replace(/^.*node_modules\//, 'node_modules/');
    const name = `${cf.functionName || '(anonymous)'} ${url}${cf.lineNumber >= 0 ? `:${cf.lineNumber + 1}` : ''}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const f = cf.url ? url.split(':')[0] : cf.functionName.startsWith('(') ? cf.functionName : '(native)';
    byFile.set(f, (byFile.get(f) ?? 0) + us);
    if (cf.functionName === '(idle)') continue;
    const chain = [short(cf)];
    for (let q = parent.get(id), k = 0; q !== undefined && k < 3; q = parent.get(q), k++) chain.push(short(byId.get(q).callFrame));
    const key = chain.join(' <- ');
    chains.set(key, (chains.get(key) ?? 0) + us);
  }
  const pct = (us) => ((100 * us) / totalUs).toFixed(1);
  const rows = [...fn].sort((a, b) => b[1] - a[1]).slice(0, top);
  const files = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 15);
  let md = `Profile: ${(totalUs / 1e6).toFixed(2)} s of main-thread samples.\n\n| self ms | % | function |\n|---:|---:|---|\n`;
  for (const [n, us] of rows) md += `| ${(us / 1000).toFixed(0)} | ${pct(us)} | \`${n}\` |\n`;
  md += `\n| self ms | % | file / category |\n|---:|---:|---|\n`;
  for (const [n, us] of files) md += `| ${(us / 1000).toFixed(0)} | ${pct(us)} | \`${n}\` |\n`;
  md += `\n| self ms | % | function <- its callers |\n|---:|---:|---|\n`;
  for (const [n, us] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, 15)) md += `| ${(us / 1000).toFixed(0)} | ${pct(us)} | \`${n}\` |\n`;
  return md;
}
