// A token_file rotated under a running agent (README "Configuration": the file
// is re-read when it changes and on SIGHUP): a rewrite that cannot be the
// token (emptied first, as `> file` does) keeps the token in use, with one
// WARN naming the file, instead of sending with no token and parking the
// whole budget; a new file others may read is the same WARN as at start.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorsIn, getJson, lines, spawnAgent, startEmu, tempDir, waitFor, waitForDelivery, writeConfig } from './helpers.js';

const TOKEN = 'tok_rotation_first_0123456789';
const NEXT = 'tok_rotation_second_987654321';

describe('token_file rotation (process)', () => {
  it('emptied then SIGHUP: one WARN token_file_refused and shipping goes on with the token in use; a new 0644 file: token_changed and token_file_readable', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir, { tokens: [TOKEN, NEXT] });
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const paths = await writeConfig(dir, t, { api: { token: null, token_file: tokenFile } });
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    let written = 0;
    const write = async (n: number) => {
      await writeFile(file, lines('r', written, n), { flag: 'a' });
      written += n;
    };
    await write(100);
    const agent = spawnAgent(paths.configFile);
    const admin = (await agent.started)!;
    await waitForDelivery(t, 'ev', 'r', written, 'the first lines');
    expect(agent.logs.filter((l) => l.event === 'token_file_readable')).toEqual([]);

    // Truncated first, as a shell's `>` does, and a SIGHUP in that moment.
    await writeFile(tokenFile, '');
    agent.child.kill('SIGHUP');
    await waitFor(() => agent.logs.some((l) => l.event === 'reload_unchanged'), 'the reload');
    await waitFor(() => agent.logs.some((l) => l.event === 'token_file_refused'), 'the refusal');
    await write(50);
    await waitForDelivery(t, 'ev', 'r', written, 'the lines sent with the token in use');
    const refused = agent.logs.filter((l) => l.event === 'token_file_refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 40, file: tokenFile, problem: expect.stringMatching(/^is empty/) });
    expect(((await getJson(`${admin}/readyz`)).body as { reasons: string[] }).reasons).toEqual([]);
    expect(agent.logs.filter((l) => l.event === 'parked')).toEqual([]);

    // The next token, written elsewhere under umask 022 and moved in.
    const staged = path.join(dir, 'token.new');
    await writeFile(staged, `${NEXT}\n`, { mode: 0o644 });
    await rename(staged, tokenFile);
    await waitFor(() => agent.logs.some((l) => l.event === 'token_changed'), 'the new token noticed');
    await waitFor(() => agent.logs.some((l) => l.event === 'token_file_readable'), 'the WARN about its mode');
    await write(50);
    await waitForDelivery(t, 'ev', 'r', written, 'the lines sent with the next token');
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    expect(errorsIn(agent)).toEqual([]);
  });
});
