// What the agent loads costs its main thread at every start. Node's own copy
// of undici (for its fetch and WebSocket; the agent ships with the npm one)
// was loaded twice over: by node:http's ES facade (src/admin/server.ts and
// the emulator's src/emulator/http/server.ts now require node:http) and, at
// the first request, by undici's index, whose cookie helpers read
// globalThis.Headers (src/net/undici-parts.ts loads only the dispatchers).
// Read from the shipping process's own list of loaded modules, written at
// its exit.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, lines, metric, spawnAgent, startEmu, tempDir, waitFor, writeConfig, type AgentProcess, type TestEmu } from './helpers.js';

const LINES = 200;

/**
 * An agent (config `overrides` on the test's) shipping LINES lines of `ev`,
 * with a hook that writes its list of loaded modules at its exit; `loaded`
 * stops it (SIGTERM, exit 0) and reads the list.
 */
async function shipping(overrides: Record<string, unknown> = {}): Promise<{ t: TestEmu; agent: AgentProcess; admin: string | null; loaded: () => Promise<string[]> }> {
  const dir = await tempDir();
  const t = await startEmu(dir);
  const paths = await writeConfig(dir, t, overrides);
  const hook = path.join(dir, 'hook.cjs');
  const out = path.join(dir, 'loaded.txt');
  await writeFile(hook, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')));\n`);
  await mkdir(path.join(paths.spoolDir, 'ev'), { recursive: true });
  await writeFile(path.join(paths.spoolDir, 'ev', 'app.ndjson'), lines('m', 0, LINES));
  const agent = spawnAgent(paths.configFile, { NODE_OPTIONS: `--require ${hook}` });
  const admin = await agent.started;
  const loaded = async () => {
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    return (await readFile(out, 'utf8')).split('\n');
  };
  return { t, agent, admin, loaded };
}

describe('modules loaded (process)', () => {
  it("a shipping agent never loads Node's own undici", async () => {
    const { t, loaded } = await shipping();
    await waitFor(async () => ((await checkDelivery(t, 'ev', 'm', LINES)).missing === 0 ? true : null), 'every line');
    const list = await loaded();
    expect(list, 'the agent served and sent over HTTP').toContain('NativeModule http');
    expect(list.filter((m) => m.includes('internal/deps/undici'))).toEqual([]);
  });

  it("nor does one that ships to the embedded emulator (api.base_url: embedded, npm start's quickstart)", async () => {
    const { admin, loaded } = await shipping({ api: { base_url: 'embedded' } });
    await waitFor(async () => ((await metric(admin!, 'spoolship_lines_acked_total')) >= LINES ? true : null), 'every line acknowledged');
    const list = await loaded();
    expect(list, 'the emulator served over HTTP').toContain('NativeModule _http_server');
    expect(list.filter((m) => m.includes('internal/deps/undici'))).toEqual([]);
  });
});
