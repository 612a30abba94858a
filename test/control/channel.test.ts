// The control channel (src/control/): a Unix socket in state_dir, one JSON
// request and one JSON answer per connection. Real sockets in temp dirs.
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { askControl } from '../../src/control/client.js';
import { MAX_SOCKET_PATH_BYTES, controlSocketPath, type ControlRequest } from '../../src/control/protocol.js';
import { ControlServer } from '../../src/control/server.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function stateDir(extra = ''): Promise<string> {
  const base = await mkdtemp(path.join(os.tmpdir(), 'spoolship-ctl-'));
  cleanups.push(() => rm(base, { recursive: true, force: true }));
  const dir = path.join(base, extra, 'state');
  await mkdir(dir, { recursive: true });
  return dir;
}

async function serve(dir: string): Promise<{ server: ControlServer; seen: ControlRequest[] }> {
  const seen: ControlRequest[] = [];
  const server = await ControlServer.listen(dir, {
    handle: async (req) => {
      seen.push(req);
      return { ok: true, rows: [] };
    },
  });
  cleanups.push(() => server.close());
  return { server, seen };
}

describe('control channel', () => {
  it('answers one request per connection; the socket is removed on close, and then nobody answers (null)', async () => {
    const dir = await stateDir();
    const { server, seen } = await serve(dir);
    expect(await askControl(dir, { op: 'queue_list', datasource: 'ev' }, 5000)).toEqual({ ok: true, rows: [] });
    expect(seen).toEqual([{ op: 'queue_list', datasource: 'ev' }]);
    expect((await stat(controlSocketPath(dir))).isSocket()).toBe(true);
    await server.close();
    await expect(stat(controlSocketPath(dir))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await askControl(dir, { op: 'queue_list' }, 5000)).toBeNull();
  });

  it('a state_dir whose socket path is longer than sun_path allows still works (bound relative to the state_dir)', async () => {
    const dir = await stateDir('x'.repeat(90));
    expect(Buffer.byteLength(controlSocketPath(dir))).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    const cwd = process.cwd();
    const { seen } = await serve(dir);
    expect(process.cwd()).toBe(cwd);
    expect(await askControl(dir, { op: 'queue_dead_letter', ids: [3, 4] }, 5000)).toEqual({ ok: true, rows: [] });
    expect(process.cwd()).toBe(cwd);
    expect(seen).toEqual([{ op: 'queue_dead_letter', ids: [3, 4], datasource: undefined }]);
  });

  it('a stale socket file left by a kill -9: no agent (null); a new agent replaces it', async () => {
    const dir = await stateDir();
    const file = controlSocketPath(dir);
    const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(file)}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((r) => child.stdout!.once('data', r));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect((await stat(file)).isSocket()).toBe(true);
    expect(await askControl(dir, { op: 'queue_list' }, 5000)).toBeNull();
    await serve(dir);
    expect(await askControl(dir, { op: 'queue_list' }, 5000)).toEqual({ ok: true, rows: [] });
  });

  it('refuses requests that are not JSON, of an unknown op, with bad ids, or longer than 64 KiB', async () => {
    const dir = await stateDir();
    const { seen } = await serve(dir);
    const raw = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const s = net.connect(controlSocketPath(dir));
        let out = '';
        s.on('data', (c) => (out += c));
        s.on('end', () => resolve(out));
        s.on('error', reject);
        s.write(text);
      });
    expect(JSON.parse(await raw('nope\n'))).toMatchObject({ ok: false, code: 2, error: 'request is not JSON' });
    expect(JSON.parse(await raw('{"op":"rm -rf"}\n'))).toMatchObject({ ok: false, code: 2 });
    expect(JSON.parse(await raw('{"op":"queue_dead_letter","ids":["1; x"]}\n'))).toMatchObject({ ok: false, code: 2, error: 'ids must be batch ids' });
    expect(JSON.parse(await raw(`{"op":"queue_list","pad":"${'a'.repeat(70 * 1024)}`))).toMatchObject({ ok: false, code: 2 });
    expect(seen).toEqual([]);
  });
});
