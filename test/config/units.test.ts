import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes, parseDuration, parseSize } from '../../src/config/index.js';

describe('parseSize', () => {
  it('reads integers as bytes', () => {
    expect(parseSize(0)).toBe(0);
    expect(parseSize(10_000_000)).toBe(10_000_000);
    expect(parseSize('4096')).toBe(4096);
  });

  it('reads decimal units in 10^3 steps', () => {
    expect(parseSize('1KB')).toBe(1000);
    expect(parseSize('10MB')).toBe(10_000_000);
    expect(parseSize('2GB')).toBe(2_000_000_000);
    expect(parseSize('1.5MB')).toBe(1_500_000);
    expect(parseSize('10 MB')).toBe(10_000_000);
  });

  it('reads binary units in 2^10 steps', () => {
    expect(parseSize('1KiB')).toBe(1024);
    expect(parseSize('64MiB')).toBe(67_108_864);
    expect(parseSize('1GiB')).toBe(1_073_741_824);
    expect(parseSize('1.5KiB')).toBe(1536);
  });

  it('accepts units in any case and a bare B', () => {
    expect(parseSize('10mb')).toBe(10_000_000);
    expect(parseSize('64mib')).toBe(67_108_864);
    expect(parseSize('512B')).toBe(512);
  });

  it('refuses what is not a size, saying what to write', () => {
    expect(() => parseSize('ten MB')).toThrow(/KB, MB, GB .* KiB, MiB, GiB/);
    expect(() => parseSize('10XB')).toThrow(/not a size/);
    expect(() => parseSize('0.3KiB')).toThrow(/whole number of bytes/);
    expect(() => parseSize(1.5)).toThrow(/whole number/);
    expect(() => parseSize(true)).toThrow(/expected a size/);
  });

  it('round-trips n * unit for every unit (property)', () => {
    const units = [['KB', 1e3], ['MB', 1e6], ['GB', 1e9], ['KiB', 1024], ['MiB', 2 ** 20], ['GiB', 2 ** 30]] as const;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4096 }), fc.constantFrom(...units), (n, [unit, factor]) => {
        expect(parseSize(`${n}${unit}`)).toBe(n * factor);
      }),
    );
  });
});

describe('parseDuration', () => {
  it('reads integer milliseconds', () => {
    expect(parseDuration(250)).toBe(250);
    expect(parseDuration('60000')).toBe(60_000);
    expect(parseDuration(0)).toBe(0);
  });

  it('refuses unit strings and names the number to write instead', () => {
    expect(() => parseDuration('5s')).toThrow('write 5000');
    expect(() => parseDuration('250ms')).toThrow('write 250');
    expect(() => parseDuration('2m')).toThrow('write 120000');
    expect(() => parseDuration(1.5)).toThrow(/whole number of milliseconds/);
    expect(() => parseDuration('soon')).toThrow(/expected a duration/);
  });
});

describe('formatBytes', () => {
  it('prefers the unit that divides exactly', () => {
    expect(formatBytes(10_000_000)).toBe('10MB');
    expect(formatBytes(67_108_864)).toBe('64MiB');
    expect(formatBytes(1000)).toBe('1KB');
    expect(formatBytes(1001)).toBe('1001 bytes');
  });
});
