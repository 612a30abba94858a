// The per-organization sliding 1 s window, driven by an injected clock.
import { describe, expect, it } from 'vitest';
import { fakeClock, postEvents, startEmu } from './helpers.js';

describe('rate limit', () => {
  it('150 requests in one (frozen) second: exactly 100 answered 200 and 50 answered 429', async () => {
    const clock = fakeClock();
    const emu = await startEmu({ now: clock.now });
    const answers = await Promise.all(Array.from({ length: 150 }, () => postEvents(emu)));
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok).toHaveLength(100);
    expect(limited).toHaveLength(50);
    for (const a of limited) {
      expect(a.headers['x-ratelimit-limit']).toBe('100');
      expect(a.headers['x-ratelimit-remaining']).toBe('0');
      expect(a.headers['x-ratelimit-reset']).toBe('1');
      expect(a.headers['retry-after']).toBe('1');
    }
    expect(emu.stats().requests_by_status).toEqual({ '200': 100, '429': 50 });

    clock.advance(999);
    expect((await postEvents(emu)).status).toBe(429); // still inside the window
    clock.advance(1000);
    expect((await postEvents(emu)).status).toBe(200); // the window has moved past all of them
  });

  it('requests answered 429 count too: a client that keeps hammering stays limited', async () => {
    const clock = fakeClock();
    const emu = await startEmu({ rps: 3, now: clock.now });
    for (let i = 0; i < 3; i++) expect((await postEvents(emu)).status).toBe(200);
    clock.advance(600);
    expect((await postEvents(emu)).status).toBe(429); // at +600
    clock.advance(500); // +1100: the first three left, but the 429 at +600 is still in
    expect((await postEvents(emu)).status).toBe(200);
    expect((await postEvents(emu)).status).toBe(200);
    const res = await postEvents(emu);
    expect(res.status).toBe(429);
    // In the window: +600, +1100, +1100, +1100 (this one). A slot frees when
    // +1100 leaves, at +2100: 1000 ms away -> 1 s.
    expect(res.headers['x-ratelimit-reset']).toBe('1');
  });

  it('X-RateLimit-Reset rounds the wait up to whole seconds, at least 1', async () => {
    const clock = fakeClock();
    const emu = await startEmu({ rps: 1, now: clock.now });
    expect((await postEvents(emu)).status).toBe(200);
    clock.advance(999);
    const res = await postEvents(emu);
    expect(res.status).toBe(429);
    expect(res.headers['x-ratelimit-reset']).toBe('1');
    expect(res.headers['retry-after']).toBe('1');
  });

  it('bad tokens are not counted against the organization', async () => {
    const clock = fakeClock();
    const emu = await startEmu({ rps: 1, now: clock.now });
    expect((await postEvents(emu, { token: 'bad' })).status).toBe(403);
    expect((await postEvents(emu)).status).toBe(200);
  });
});
