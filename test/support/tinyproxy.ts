// A real forward proxy for the network tests: Debian's tinyproxy, started in
// the foreground with its own config file in the test's temp dir, on a free
// port, optionally with Basic credentials. Its log (LogLevel Connect) shows
// every CONNECT it was asked for, which is how a test proves a request went
// through it (or, once that request has been answered, that it did not).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export interface TestProxy {
  /** http://[user:password@]127.0.0.1:PORT */
  url: string;
  port: number;
  /** The CONNECT targets it was asked for, in order (host:port). */
  connects(): string[];
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export async function startTinyproxy(dir: string, auth?: { user: string; password: string }): Promise<TestProxy> {
  const port = await freePort();
  const logFile = path.join(dir, `tinyproxy-${port}.log`);
  const conf = path.join(dir, `tinyproxy-${port}.conf`);
  await writeFile(
    conf,
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 30',
      `LogFile "${logFile}"`,
      'LogLevel Connect',
      'MaxClients 200',
      `PidFile "${path.join(dir, `tinyproxy-${port}.pid`)}"`,
      ...(auth ? [`BasicAuth ${auth.user} ${auth.password}`] : []),
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('tinyproxy', ['-d', '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  // Not installed: say how to get it instead of an unhandled spawn error.
  child.once('error', (err: NodeJS.ErrnoException) => (stderr += `${err.code === 'ENOENT' ? 'tinyproxy is not installed (Debian: apt-get install tinyproxy)' : err.message}`));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  await waitListening(port, exited, () => stderr);
  const userinfo = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@` : '';
  return {
    url: `http://${userinfo}127.0.0.1:${port}`,
    port,
    connects: () => {
      let text = '';
      try {
        text = readFileSync(logFile, 'utf8');
      } catch {
        return [];
      }
      return [...text.matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((m) => m[1]!);
    },
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function waitListening(port: number, exited: Promise<void>, stderr: () => string): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  for (let i = 0; i < 200; i++) {
    if (gone) throw new Error(`tinyproxy exited at start: ${stderr()}`);
    const ok = await new Promise<boolean>((r) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), r(true)));
      s.once('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`tinyproxy did not listen on ${port}: ${stderr()}`);
}
