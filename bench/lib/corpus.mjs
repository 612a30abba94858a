// Deterministic corpus of realistic ~440-byte JSON events (NDJSON). The same
// seed and size always give the same bytes, so runs are comparable. A corpus
// is written once under bench/corpus/ and reused while its manifest matches.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

const PATHS = ['/', '/pricing', '/docs/getting-started', '/docs/api/events', '/blog/2026/ingestion-at-scale', '/signup', '/login', '/account/billing', '/search', '/products/42/reviews'];
const EVENTS = ['page_view', 'click', 'signup', 'purchase', 'search', 'scroll', 'error'];
const COUNTRIES = ['DE', 'US', 'FR', 'ES', 'GB', 'BR', 'IN', 'JP', 'NL', 'SE'];
const DEVICES = ['desktop', 'mobile', 'tablet'];
const AGENTS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
];
const REFERRERS = ['https://www.google.com/', 'https://news.ycombinator.com/', '', 'https://t.co/x1y2z3', 'https://github.com/'];

/** xorshift32: tiny, fast, deterministic. */
export function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

function hex(r, n) {
  let out = '';
  while (out.length < n) out += r().toString(16).padStart(8, '0');
  return out.slice(0, n);
}

const T0 = Date.UTC(2026, 0, 1);

/** One event line (with its newline); `i` is its sequence number. */
export function makeLine(r, i) {
  const ts = new Date(T0 + i * 7 + (r() % 5)).toISOString();
  return (
    `{"ts":"${ts}","seq":${i},"event":"${EVENTS[r() % EVENTS.length]}","session_id":"${hex(r, 32)}","user_id":"u_${r() % 1000000}",` +
    `"path":"${PATHS[r() % PATHS.length]}","referrer":"${REFERRERS[r() % REFERRERS.length]}","user_agent":"${AGENTS[r() % AGENTS.length]}",` +
    `"country":"${COUNTRIES[r() % COUNTRIES.length]}","device":"${DEVICES[r() % DEVICES.length]}","duration_ms":${r() % 5000},` +
    `"status":${r() % 23 === 0 ? 500 : 200},"bytes":${r() % 100000},"trace_id":"${hex(r, 32)}","tags":["ab_${r() % 8}","v2"]}\n`
  );
}

/** Fill files with whole lines; returns { bytes, lines } per file. */
function writeLines(file, targetBytes, r, seq) {
  const fd = openSync(file, 'w');
  let bytes = 0;
  let lines = 0;
  let chunk = [];
  let chunkLen = 0;
  while (bytes < targetBytes) {
    const l = makeLine(r, seq.n++);
    chunk.push(l);
    chunkLen += l.length;
    bytes += l.length;
    lines++;
    if (chunkLen >= 4 << 20) {
      writeSync(fd, chunk.join(''));
      chunk = [];
      chunkLen = 0;
    }
  }
  if (chunk.length) writeSync(fd, chunk.join(''));
  closeSync(fd);
  return { bytes, lines };
}

function cached(dir, want) {
  const mf = path.join(dir, 'manifest.json');
  if (!existsSync(mf)) return null;
  try {
    const m = JSON.parse(readFileSync(mf, 'utf8'));
    return JSON.stringify(m.params) === JSON.stringify(want) ? m : null;
  } catch {
    return null;
  }
}

/**
 * Backlog corpus: `<root>/<ds>/part-NNN.ndjson`, files of at most `fileBytes`.
 * Returns { dir, ds, files, bytes, lines }.
 */
export function backlogCorpus(root, { bytes, seed = 42, ds = 'bench_events', fileBytes = 256 * 1024 * 1024 }) {
  const params = { kind: 'backlog', bytes, seed, ds, fileBytes, v: 1 };
  const dir = path.join(root, `backlog-${bytes}-${seed}`);
  const hit = cached(dir, params);
  if (hit) return { ...hit, dir, cached: true };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, ds), { recursive: true });
  const r = rng(seed);
  const seq = { n: 0 };
  let total = 0;
  let lines = 0;
  let files = 0;
  while (total < bytes) {
    const f = path.join(dir, ds, `part-${String(files).padStart(3, '0')}.ndjson`);
    const w = writeLines(f, Math.min(fileBytes, bytes - total), r, seq);
    total += w.bytes;
    lines += w.lines;
    files++;
  }
  const m = { params, ds, files, bytes: total, lines };
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(m));
  return { ...m, dir, cached: false };
}

/** Many small files: `count` files of 10-100 KB in `<root>/<ds>/`. */
export function manyFilesCorpus(root, { count, seed = 7, ds = 'bench_many', minBytes = 10_000, maxBytes = 100_000 }) {
  const params = { kind: 'many', count, seed, ds, minBytes, maxBytes, v: 1 };
  const dir = path.join(root, `many-${count}-${seed}`);
  const hit = cached(dir, params);
  if (hit) return { ...hit, dir, cached: true };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, ds), { recursive: true });
  const r = rng(seed);
  const seq = { n: 0 };
  let total = 0;
  let lines = 0;
  for (let i = 0; i < count; i++) {
    const size = minBytes + (r() % (maxBytes - minBytes));
    const w = writeLines(path.join(dir, ds, `f-${String(i).padStart(5, '0')}.ndjson`), size, r, seq);
    total += w.bytes;
    lines += w.lines;
  }
  const m = { params, ds, files: count, bytes: total, lines };
  writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(m));
  return { ...m, dir, cached: false };
}
