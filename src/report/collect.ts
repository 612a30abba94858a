// Where `spoolship status` gets its report: the running agent's /status at
// admin.listen when it answers for this state_dir, else the same report
// through the agent's control socket in state_dir (admin.listen disabled, or
// port 0: its address is known only to the agent), else the state_dir itself
// (read-only, state-reader.ts) plus the lock file's holder. The report says
// which source was used and why the agent was not asked.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { parseListen } from '../admin/server.js';
import { askControl } from '../control/client.js';
import type { Config } from '../config/types.js';
import { ControlUntrustedError, FatalIoError, SpoolshipError } from '../errors.js';
import { checkLayout } from '../spool/layout.js';
import { readLockHolder } from '../state/lock.js';
import { fileBytes, isStatusReport, STATUS_VERSION, totals, type DataSourceStatus, type FileStatus, type StatusReport } from './report.js';
import { readQueueView } from './queue-reader.js';
import { readStateView } from './state-reader.js';

/** The admin server answers from memory: anything slower is not a healthy agent. */
export const ADMIN_TIMEOUT_MS = 2000;

export type AdminAnswer = { kind: 'report'; report: StatusReport } | { kind: 'unavailable'; why: string };

/** http://host:port for admin.listen; wildcard addresses are asked on loopback. */
export function adminUrlFor(listen: string): string | null {
  if (listen === '') return null;
  const { host, port } = parseListen(listen);
  if (!Number.isInteger(port) || port <= 0) return null;
  const h = host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

export async function askAgent(config: Readonly<Config>, timeoutMs = ADMIN_TIMEOUT_MS): Promise<AdminAnswer> {
  if (config.admin.listen === '') return { kind: 'unavailable', why: 'admin.listen is disabled' };
  const base = adminUrlFor(config.admin.listen);
  if (!base) return { kind: 'unavailable', why: `admin.listen ${config.admin.listen} names no fixed port` };
  let body: unknown;
  try {
    const res = await fetch(`${base}/status`, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 200) return { kind: 'unavailable', why: `${base}/status answered HTTP ${res.status}` };
    body = await res.json();
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    const what = cause?.code ?? (err as Error).name;
    return { kind: 'unavailable', why: `no answer from ${base}/status (${what})` };
  }
  if (!isStatusReport(body)) return { kind: 'unavailable', why: `${base}/status is not a spoolship status (version ${STATUS_VERSION}) answer` };
  if (path.resolve(body.state_dir) !== path.resolve(config.state_dir)) {
    return { kind: 'unavailable', why: `the agent at ${base} serves state_dir ${body.state_dir}, not this config's` };
  }
  return { kind: 'report', report: body };
}

/** Where a report came from: the agent's admin endpoint, its control socket, or the state_dir on disk. */
export type StatusRoute = 'admin' | 'control' | 'state_dir';

/** The status report, and which way it came (status's source line). */
export async function collectStatusRoute(config: Readonly<Config>, now: () => Date = () => new Date()): Promise<{ report: StatusReport; via: StatusRoute }> {
  const answer = await askAgent(config);
  if (answer.kind === 'report') return { report: answer.report, via: 'admin' };
  const viaControl = await askControlSocket(config);
  if (viaControl.kind === 'report') return { report: viaControl.report, via: 'control' };
  try {
    return { report: await reportFromStateDir(config, `${answer.why}; ${viaControl.why}`, now()), via: 'state_dir' };
  } catch (err) {
    if (err instanceof SpoolshipError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new FatalIoError(`cannot read state_dir ${config.state_dir} (${code}); check its permissions, or run status as the agent's user`, err);
  }
}

/** The agent's report through its control socket (protocol.ts); unavailable when no agent runs on this state_dir. */
async function askControlSocket(config: Readonly<Config>): Promise<AdminAnswer> {
  let answer;
  try {
    answer = await askControl(config.state_dir, { op: 'status' }, ADMIN_TIMEOUT_MS);
  } catch (err) {
    // A forged socket is refused, not read around: exit 2 (control/trust.ts).
    if (err instanceof ControlUntrustedError) throw err;
    return { kind: 'unavailable', why: (err as Error).message };
  }
  if (answer === null) return { kind: 'unavailable', why: 'no agent listens on the control socket' };
  if (answer.ok && 'report' in answer && isStatusReport(answer.report)) return { kind: 'report', report: answer.report };
  return { kind: 'unavailable', why: `the control socket's answer is not a spoolship status (version ${STATUS_VERSION})` };
}

export async function reportFromStateDir(config: Readonly<Config>, adminError: string | null, at: Date): Promise<StatusReport> {
  const stateDir = config.state_dir;
  const [view, queue, pid, layout] = await Promise.all([
    readStateView(stateDir),
    readQueueView(path.join(stateDir, 'queue')),
    readLockHolder(stateDir),
    checkLayout(config.spool.dir),
  ]);
  const byDs = new Map<string, FileStatus[]>();
  for (const f of view.files) {
    const size = await sizeIfSameFile(f.meta.path, f.meta.dev, f.meta.ino);
    let list = byDs.get(f.meta.ds);
    if (!list) byDs.set(f.meta.ds, (list = []));
    list.push({ path: f.meta.path, size, read: f.read, ...fileBytes(size, f.read, f.committed, view.queuedRanges.get(f.meta.key) ?? []) });
  }
  for (const ds of queue.byDataSource.keys()) if (!byDs.has(ds)) byDs.set(ds, []);
  const datasources: DataSourceStatus[] = [...byDs.keys()].sort().map((ds) => {
    const files = byDs.get(ds)!.sort((a, b) => a.path.localeCompare(b.path));
    const queued = queue.byDataSource.get(ds) ?? { batches: 0, bytes: 0 };
    return { datasource: ds, lines_read: null, lines_acked: null, rows_quarantined: null, lines_dead_lettered: null, ...totals(files), last_error: null, parked: null, queue: queued, files };
  });
  return {
    version: STATUS_VERSION,
    source: 'state_dir',
    generated_at: at.toISOString(),
    state_dir: stateDir,
    agent: { running: pid !== null, pid, admin_url: adminUrlFor(config.admin.listen), admin_error: adminError, api: null, ready: null, reasons: [] },
    queue: { batches: queue.batches, bytes: queue.bytes },
    batches_active: view.pendingBatches,
    in_flight: null,
    spool: { dir: config.spool.dir, missing: layout.missing, skipped_dirs: layout.skippedDirs },
    datasources,
  };
}

/** Size of the file at `p` if it is still the tracked file (same device and inode). */
async function sizeIfSameFile(p: string, dev: number, ino: number): Promise<number | null> {
  try {
    const st = await fsp.stat(p);
    return st.dev === dev && st.ino === ino ? st.size : null;
  } catch {
    return null;
  }
}
