// What the agent loads costs its main thread at every start. Node's own copy
// of undici (for its fetch and WebSocket; the agent ships with the npm one)
// was loaded twice over: by node:http's ES facade (src/admin/server.ts and
// the emulator's src/emulator/http/server.ts now require node:http) and, at
// the first request, by undici's index, whose cookie helpers read
// globalThis.Headers (src/net/undici-parts.ts loads only the dispatchers). Read from the shipping process's own list of loaded
// modules, written at its exit.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, lines, metric, spawnAgent, startEmu, tempDir, waitFor, writeConfig, type AgentProcess } from './helpers.js';

/** A hook that writes the process's list of loaded modules to `out` at its exit. */
async function moduleListHook(dir: string): Promise<{ env: Record<string, string>; read: () => Promise<string[]> }> {
  const hook = path.join(dir, 'hook.cjs');
  const out = path.join(dir, 'loaded.txt');
  await writeFile(hook, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')));\n`);
  return { env: { NODE_OPTIONS: `--require ${hook}` }, read: async () => (await readFile(out, 'utf8')).split('\n') };
}

async function stopped(agent: AgentProcess): Promise<void> {
  agent.child.kill('SIGTERM');
  expect((await agent.exited).code).toBe(0);
}

describe('modules loaded (process)', () => {
  it("a shipping agent never loads Node's own undici", async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const paths = await writeConfig(dir, t);
    const list = await moduleListHook(dir);
    await mkdir(path.join(paths.spoolDir, 'ev'), { recursive: true });
    await writeFile(path.join(paths.spoolDir, 'ev', 'app.ndjson'), lines('m', 0, 200));
    const agent = spawnAgent(paths.configFile, list.env);
    await agent.started;
    await waitFor(async () => ((await checkDelivery(t, 'ev', 'm', 200)).missing === 0 ? true : null), 'every line');
    await stopped(agent);
    const loaded = await list.read();
    expect(loaded, 'the agent served and sent over HTTP').toContain('NativeModule http');
    expect(loaded.filter((m) => m.includes('internal/deps/undici'))).toEqual([]);
  });

  it("nor does one that ships to the embedded emulator (api.base_url: embedded, npm start's quickstart)", async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const paths = await writeConfig(dir, t, { api: { base_url: 'embedded' } });
    const list = await moduleListHook(dir);
    await mkdir(path.join(paths.spoolDir, 'ev'), { recursive: true });
    await writeFile(path.join(paths.spoolDir, 'ev', 'app.ndjson'), lines('m', 0, 200));
    const agent = spawnAgent(paths.configFile, list.env);
    const admin = (await agent.started)!;
    await waitFor(async () => ((await metric(admin, 'spoolship_lines_acked_total')) >= 200 ? true : null), 'every line acknowledged');
    await stopped(agent);
    const loaded = await list.read();
    expect(loaded, 'the emulator served over HTTP').toContain('NativeModule _http_server');
    expect(loaded.filter((m) => m.includes('internal/deps/undici'))).toEqual([]);
  });
});
