import { describe, expect, it } from 'vitest';
import { parseRoleWeights, parseSets } from '../../src/clusters/args.js';
import { renderTable } from '../../src/clusters/table.js';
import { UsageError } from '../../src/errors.js';

describe('flag grammar', () => {
  it('--set: ROLE=R:W items, a role carried over to bare R:W items, several --set flags', () => {
    expect(parseSets(['writer=a:60,b:40,reader=a:10', 'copyjob=c:1'])).toEqual({ writer: { a: 60, b: 40 }, reader: { a: 10 }, copyjob: { c: 1 } });
    expect(parseSets(['reader=zone:a:5'])).toEqual({ reader: { 'zone:a': 5 } });
  });

  it('--set errors are UsageErrors naming the text', () => {
    for (const bad of ['a:5', 'writer=a', 'writer=a:-1', 'writer=a:1,a:2', 'writer=:5', 'writer=a:1e2']) {
      expect(() => parseSets([bad]), bad).toThrow(UsageError);
    }
  });

  it('--weight: ROLE=W, repeatable or comma-separated; duplicates refused', () => {
    expect(parseRoleWeights(['reader=25', 'writer=0,copyjob=1'])).toEqual({ reader: 25, writer: 0, copyjob: 1 });
    expect(() => parseRoleWeights(['reader=1', 'reader=2'])).toThrow(/given twice/);
    expect(() => parseRoleWeights(['=3'])).toThrow(UsageError);
  });
});

describe('tables', () => {
  it('align on plain text, colour after padding, right-align number columns', () => {
    const rows = [['a', { text: 'running', color: 'green' as const }, '5'], ['bbb', { text: 'adding', color: 'yellow' as const }, '100']];
    const plain = renderTable(['NAME', 'STATE', 'N'], rows, { color: false, right: new Set([2]) });
    expect(plain).toBe(['NAME  STATE      N', 'a     running    5', 'bbb   adding   100', ''].join('\n'));
    const coloured = renderTable(['NAME', 'STATE', 'N'], rows, { color: true, right: new Set([2]) });
    expect(coloured.replace(/\x1b\[\d+m/g, '')).toBe(plain);
    expect(coloured).toContain('\x1b[32mrunning\x1b[39m');
  });
});
