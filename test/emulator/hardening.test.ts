// The emulator as a long-running server: hostile or unusual requests get the
// platform's answers, never a crash, a leaked path or unbounded memory.
import { readdir, readFile, readlink } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ndjson, postEvents, readStored, startEmu, tempDir } from './helpers.js';

async function putWeights(url: string, org: string, adminToken: string, body: string) {
  const list = await request(`${url}/v0/organizations/${org}/clusters`, { headers: { authorization: `Bearer ${adminToken}` } });
  const { clusters } = (await list.body.json()) as { clusters: { cluster_id: string }[] };
  const res = await request(`${url}/v0/organizations/${org}/clusters/${clusters[0]!.cluster_id}/weights`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

describe('cluster API bodies', () => {
  it('deeply nested JSON is a 400 with a JSON error', async () => {
    const emu = await startEmu();
    const depth = 100_000;
    for (const body of [
      `{"old_weights":${'['.repeat(depth)}${']'.repeat(depth)},"new_weights":{}}`,
      `{"old_weights":{"writer":{"a":${'{"x":'.repeat(depth)}1${'}'.repeat(depth)}}},"new_weights":{}}`,
    ]) {
      const res = await putWeights(emu.url, emu.org, emu.adminToken, body);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toEqual({ error: 'request body nests deeper than 32 levels' });
    }
    // Ordinary bodies, and brackets inside strings, still reach the weights checks.
    const quoted = await putWeights(emu.url, emu.org, emu.adminToken, `{"old_weights":{"${'['.repeat(100)}":{}},"new_weights":{}}`);
    expect(JSON.parse(quoted.text).error).not.toContain('nests deeper');
  });
});
