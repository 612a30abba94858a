// Files read whole (the config, the token file, the CA bundle) are opened
// without blocking, only when regular, and read up to a bound (README
// "Troubleshooting"): a FIFO in their place blocked the whole process in
// open(), a link to /dev/zero filled memory.
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { TokenSource } from '../../src/sender/token.js';
import { readRegularFile, readRegularFileSync } from '../../src/util/bounded-read.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function dirWith(): Promise<{ dir: string; fifo: string; zero: string; big: string; ok: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spoolship-bounded-'));
  dirs.push(dir);
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const zero = path.join(dir, 'zero');
  symlinkSync('/dev/zero', zero);
  const big = path.join(dir, 'big');
  writeFileSync(big, Buffer.alloc(2048, 0x61));
  const ok = path.join(dir, 'ok');
  writeFileSync(ok, 'hello\n');
  return { dir, fifo, zero, big, ok };
}

describe('bounded reads of regular files', () => {
  it('read a regular file; refuse a FIFO (without blocking), a device and a file over the bound', async () => {
    const f = await dirWith();
    expect(readRegularFileSync(f.ok, 1024).toString()).toBe('hello\n');
    expect((await readRegularFile(f.ok, 1024)).toString()).toBe('hello\n');
    for (const read of [(p: string) => Promise.resolve().then(() => readRegularFileSync(p, 1024)), (p: string) => readRegularFile(p, 1024)]) {
      await expect(read(f.fifo)).rejects.toMatchObject({ code: 'ENOTREG' });
      await expect(read(f.zero)).rejects.toMatchObject({ code: 'ENOTREG' });
      await expect(read(f.big)).rejects.toMatchObject({ code: 'EFBIG' });
    }
  });

  it('a config that is a FIFO or /dev/zero is a config error naming it', async () => {
    const f = await dirWith();
    for (const file of [f.fifo, f.zero]) {
      let err: unknown = null;
      try {
        loadConfig({ file, env: {}, cwd: f.dir, tokenRequired: false });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect(String((err as Error).message)).toContain(file);
      expect(String((err as Error).message)).toContain('not a regular file');
    }
  });

  it('a token file replaced by a FIFO keeps the token, and the read returns', async () => {
    const f = await dirWith();
    const tokenFile = path.join(f.dir, 'token');
    writeFileSync(tokenFile, 'tok-1\n');
    const token = await TokenSource.create(null, tokenFile);
    expect(token.get()).toBe('tok-1');
    await rm(tokenFile);
    execFileSync('mkfifo', [tokenFile]);
    expect(await token.reload()).toEqual({ problem: 'cannot read it (ENOTREG); create it or fix the path' });
    expect(token.get()).toBe('tok-1');
  });
});
