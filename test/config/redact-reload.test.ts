import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, redactUrlPassword, restartRequiredChanges } from '../../src/config/index.js';
import { interpolate } from '../../src/config/interpolate.js';
import type { Config } from '../../src/config/types.js';

describe('redactUrlPassword', () => {
  it('hides the password, keeps the user, host and path', () => {
    expect(redactUrlPassword('redis://:pw@redis:6379/0')).toBe('redis://:***@redis:6379/0');
    expect(redactUrlPassword('rediss://default:pw@redis:6380')).toBe('rediss://default:***@redis:6380');
    expect(redactUrlPassword('redis://redis:6379')).toBe('redis://redis:6379');
  });

  it('hides a lone userinfo and everything up to the last @', () => {
    expect(redactUrlPassword('redis://secret@redis:6379')).toBe('redis://***@redis:6379');
    expect(redactUrlPassword('redis://u:p@ss@redis:6379')).toBe('redis://u:***@redis:6379');
  });

  it('hides a password given as a query parameter (ioredis reads ?password=), with an @ in it too', () => {
    expect(redactUrlPassword('redis://127.0.0.1:6379/0?username=spool&password=Pw_9f8e7d6c5b4a')).toBe('redis://127.0.0.1:6379/0?username=spool&password=***');
    expect(redactUrlPassword('redis://h/0?Password=a%40b&db=1')).toBe('redis://h/0?Password=***&db=1');
    expect(redactUrlPassword('rediss://u:pw@h:6380/0?password=p@ss&tls=1')).toBe('rediss://u:***@h:6380/0?password=***&tls=1');
    expect(redactUrlPassword('http://proxy:3128/?token=abcdef')).toBe('http://proxy:3128/?token=***');
    expect(redactUrlPassword('redis://h/0?db=1')).toBe('redis://h/0?db=1');
    // ioredis decodes the name as a URL parser does.
    expect(redactUrlPassword('redis://127.0.0.1:6390/0?%70assword=hunter2secret')).toBe('redis://127.0.0.1:6390/0?%70assword=***');
    expect(redactUrlPassword('redis://h/0?%E0%A4%A=x&password=y')).toBe('redis://h/0?%E0%A4%A=x&password=***');
  });
});

describe('restartRequiredChanges', () => {
  it('names state_dir and admin.listen when they change, nothing else', () => {
    const a = structuredClone(DEFAULTS) as Config;
    const b = structuredClone(DEFAULTS) as Config;
    b.batch.linger_ms = 5;
    b.api.base_url = 'embedded';
    expect(restartRequiredChanges(a, b)).toEqual([]);
    b.state_dir = '/elsewhere';
    b.admin.listen = '';
    expect(restartRequiredChanges(a, b)).toEqual(['state_dir', 'admin.listen']);
  });
});

describe('interpolate (properties)', () => {
  it('text with every $ written as $$ comes back unchanged, whatever the env', () => {
    fc.assert(
      fc.property(fc.string(), fc.dictionary(fc.constantFrom('A', 'B', 'HOME'), fc.string()), (s, env) => {
        const r = interpolate(s.replace(/\$/g, '$$$$'), env);
        expect(r.text).toBe(s);
        expect(r.missing).toEqual([]);
      }),
    );
  });

  it('${NAME:-default} is the value when set and non-empty, else the default', () => {
    fc.assert(
      fc.property(fc.option(fc.string()), fc.string().filter((d) => !d.includes('}')), (value, dflt) => {
        const env = value === null ? {} : { V: value };
        const r = interpolate(`\${V:-${dflt}}`, env);
        expect(r.text).toBe(value ? value : dflt);
      }),
    );
  });
});
