// What the agent loads costs its main thread at every start. Node's own copy
// of undici (for its fetch and WebSocket; the agent ships with the npm one)
// was loaded twice over: by node:http's ES facade (src/admin/server.ts now
// requires node:http) and, at the first request, by undici's index, whose
// cookie helpers read globalThis.Headers (src/net/undici-parts.ts loads only
// the dispatchers). Read from the shipping process's own list of loaded
// modules, written at its exit.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDelivery, lines, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

describe('modules loaded (process)', () => {
  it("a shipping agent never loads Node's own undici", async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const paths = await writeConfig(dir, t);
    const hook = path.join(dir, 'hook.cjs');
    const out = path.join(dir, 'loaded.txt');
    await writeFile(hook, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')));\n`);
    await mkdir(path.join(paths.spoolDir, 'ev'), { recursive: true });
    await writeFile(path.join(paths.spoolDir, 'ev', 'app.ndjson'), lines('m', 0, 200));
    const agent = spawnAgent(paths.configFile, { NODE_OPTIONS: `--require ${hook}` });
    await agent.started;
    await waitFor(async () => ((await checkDelivery(t, 'ev', 'm', 200)).missing === 0 ? true : null), 'every line');
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    const loaded = (await readFile(out, 'utf8')).split('\n');
    expect(loaded, 'the agent served and sent over HTTP').toContain('NativeModule http');
    expect(loaded.filter((m) => m.includes('internal/deps/undici'))).toEqual([]);
  });
});
