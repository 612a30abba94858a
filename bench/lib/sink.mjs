// The sink: the emulator in count-only mode, in its own process.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

export async function startSink(root, { rps = 100000, maxBody = 10_000_000, logFile = null, faults = null, latencyMs = 0 } = {}) {
  const errFd = logFile ? openSync(logFile, 'a') : 'ignore';
  const child = spawn(
    process.execPath,
    [path.join(root, 'dist/cli.js'), 'emulator', '--listen', '127.0.0.1:0', '--no-validate', '--rps', String(rps), '--max-body', String(maxBody), ...(faults ? ['--faults', faults] : []), ...(latencyMs > 0 ? ['--latency-ms', String(latencyMs)] : [])],
    { cwd: root, stdio: ['ignore', 'pipe', errFd] },
  );
  if (typeof errFd === 'number') closeSync(errFd);
  let exit = null;
  child.once('exit', (code, sig) => (exit = { code, sig }));
  const line = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error('emulator did not start within 15 s')), 15000);
    rl.once('line', (l) => {
      clearTimeout(timer);
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`emulator exited with ${code} before printing its start line`)));
  });
  const info = JSON.parse(line);
  return {
    pid: child.pid,
    url: info.url,
    token: info.token,
    get exit() {
      return exit;
    },
    async stats() {
      for (let attempt = 0; ; attempt++) {
        try {
          const r = await fetch(`${info.url}/_emulator/stats`);
          return await r.json();
        } catch (err) {
          if (exit) throw new Error(`the sink (emulator) exited: ${JSON.stringify(exit)}`);
          if (attempt >= 5) throw err;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    async close() {
      if (child.exitCode !== null) return;
      const done = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await done;
      clearTimeout(t);
    },
  };
}

/** Total requests and rows from a stats snapshot. */
export function sinkTotals(st) {
  const requests = Object.values(st.requests_by_status ?? {}).reduce((a, b) => a + b, 0);
  const ok = (st.requests_by_status?.['200'] ?? 0) + (st.requests_by_status?.['202'] ?? 0);
  const rows = Object.values(st.rows ?? {}).reduce((a, b) => a + b, 0);
  return { requests, ok, rows, bytesIn: st.bytes_in ?? 0 };
}

export function diffTotals(a, b) {
  return { requests: b.requests - a.requests, ok: b.ok - a.ok, rows: b.rows - a.rows, bytesIn: b.bytesIn - a.bytesIn };
}
