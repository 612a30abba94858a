// A client certificate renewal swaps the connection pool: requests under way
// finish on the retired one. A stop that cuts the connections (destroy())
// must cut the retired pool's too: it waited for their requests instead, up
// to api.timeout_ms (a silent server, a proxy that never answers).
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EventsClient } from '../../src/sender/http-client.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** Accepts connections and never answers. */
async function blackHole(): Promise<{ url: string; accepted: () => number }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, accepted: () => sockets.size };
}

describe('EventsClient.renew then destroy', () => {
  it("cuts the requests still on the retired pool, not waiting for api.timeout_ms", async () => {
    const server = await blackHole();
    const client = new EventsClient({ baseUrl: server.url, token: { get: () => 't' }, wait: true, http2: false, caFile: null, timeoutMs: 8000, maxConnections: 2 });
    cleanups.push(() => client.destroy());
    const outcome = client.post('ev', Buffer.from('{"a":1}\n'), null);
    await expect.poll(server.accepted).toBe(1);
    client.renew(null);
    const destroyed = client.destroy();
    // Cut by the destroy: an error of its own, not the timeout 8 s later.
    expect(await outcome).toMatchObject({ kind: 'error', timeout: false });
    await destroyed;
  });
});
