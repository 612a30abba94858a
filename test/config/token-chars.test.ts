// A token that no HTTP header can carry (a trailing \r from a variable or
// file saved with Windows line ends, a pasted character beyond Latin-1) is a
// config error naming the key, at once: undici refused the header before
// sending, and the request was retried forever as a "network" error
// (`send` never ended; `run` never parked).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { TokenSource } from '../../src/sender/token.js';
import { load, problemsOf, tempDir, writeFile } from './helpers.js';

const BASE = 'api:\n  base_url: https://api.example.com\n';

describe('a token no HTTP header can carry', () => {
  it.each([
    ['a trailing \\r from SPOOLSHIP_TOKEN', 'p.tok-1\r', 'api.token: "***": contains \\r (a carriage return: saved with Windows line ends?), which no HTTP header can carry; remove it'],
    ['a line feed inside', 'p.tok\n-1', 'api.token: "***": contains \\n (a line feed), which no HTTP header can carry; remove it'],
    ['a character beyond Latin-1', 'p.tok\u20ac1', 'api.token: "***": contains a character beyond Latin-1 (U+20AC), which no HTTP header can carry; check that the whole token, and only it, was copied'],
  ])('%s: exit 2 naming api.token, the token not shown', (_what, token, line) => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', BASE);
    const { error, lines } = problemsOf(() => load({ file, cwd: dir, env: { SPOOLSHIP_TOKEN: token }, tokenRequired: true }));
    expect(error.exitCode).toBe(2);
    expect(lines).toEqual([line]);
  });

  it('clusters.token too', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'c.yaml', `${BASE}clusters:\n  org: o\n`);
    const { lines } = problemsOf(() => load({ file, cwd: dir, env: { SPOOLSHIP_TOKEN: 'p.ok', SPOOLSHIP_ADMIN_TOKEN: 'adm\r' }, tokenRequired: true }));
    expect(lines).toEqual(['clusters.token: "***": contains \\r (a carriage return: saved with Windows line ends?), which no HTTP header can carry; remove it']);
  });

  it('a token file with one: refused at start; a rewrite with one later keeps the token in use', async () => {
    const dir = tempDir();
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 'p.tok\u00011\n');
    await expect(TokenSource.create(null, tokenFile)).rejects.toThrow(ConfigError);
    await expect(TokenSource.create(null, tokenFile)).rejects.toMatchObject({ problems: [{ path: 'api.token_file', value: tokenFile, why: 'its token contains U+0001 (a control character), which no HTTP header can carry; remove it' }] });
    // CRLF at the end is whitespace, trimmed as before.
    writeFileSync(tokenFile, 'p.tok-1\r\n');
    const token = await TokenSource.create(null, tokenFile);
    expect(token.get()).toBe('p.tok-1');
    writeFileSync(tokenFile, 'p.tok\r-2 with more\n');
    expect(await token.reload()).toEqual({ problem: 'its token contains \\r (a carriage return: saved with Windows line ends?), which no HTTP header can carry; remove it' });
    expect(token.get()).toBe('p.tok-1');
    // Reported once per change, not once per poll.
    expect(await token.reload()).toBe('unchanged');
  });

  it('an empty token file: refused at start; emptied later (a rotation that truncates first), the token in use stays until the new one is written', async () => {
    const dir = tempDir();
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, '\n');
    await expect(TokenSource.create(null, tokenFile)).rejects.toMatchObject({ problems: [{ path: 'api.token_file', value: tokenFile, why: expect.stringMatching(/^is empty; write the token into it/) }] });
    writeFileSync(tokenFile, 'p.tok-1\n');
    const token = await TokenSource.create(null, tokenFile);
    writeFileSync(tokenFile, '');
    expect(await token.reload()).toEqual({ problem: expect.stringMatching(/^is empty/) });
    expect(token.get()).toBe('p.tok-1');
    writeFileSync(tokenFile, 'p.tok-2 \n');
    expect(await token.reload()).toBe('changed');
    expect(token.get()).toBe('p.tok-2');
  });
});
