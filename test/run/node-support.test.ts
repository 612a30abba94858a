// Node.js 20 reached its end of life on 2026-04-30: spoolship supports 22
// and 24, and on 20 it still starts, with one WARN `node_end_of_life` at
// `run` start (README "Quick start").
import { describe, expect, it } from 'vitest';
import { nodeEndOfLife } from '../../src/cli/node-support.js';
import { spawnAgent, startEmu, tempDir, writeConfig } from '../process/helpers.js';

describe('nodeEndOfLife', () => {
  const now = new Date('2026-11-26T00:00:00Z');

  it('Node 20 is past its end of life (2026-04-30); 22 and 24 are supported', () => {
    expect(nodeEndOfLife('v20.20.2', now)).toEqual({ major: 20, endOfLife: '2026-04-30' });
    expect(nodeEndOfLife('v20.19.0', new Date('2026-04-30T00:00:00Z'))).toEqual({ major: 20, endOfLife: '2026-04-30' });
    expect(nodeEndOfLife('v20.19.0', new Date('2026-04-29T23:59:59Z'))).toBeNull();
    expect(nodeEndOfLife('v22.12.0', now)).toBeNull();
    expect(nodeEndOfLife('v24.0.0', now)).toBeNull();
  });

  it('each line ends at its own date; odd lines end early; an unknown newer line is not warned about', () => {
    expect(nodeEndOfLife('v22.22.0', new Date('2027-04-30T00:00:00Z'))).toEqual({ major: 22, endOfLife: '2027-04-30' });
    expect(nodeEndOfLife('v24.1.0', new Date('2028-05-01T00:00:00Z'))).toEqual({ major: 24, endOfLife: '2028-04-30' });
    expect(nodeEndOfLife('v23.11.0', now)).toEqual({ major: 23, endOfLife: '2025-06-01' });
    expect(nodeEndOfLife('v26.0.0', now)).toBeNull();
  });
});

describe('spoolship run on this machine\'s Node', () => {
  it(`warns once at start when its Node line is past its end of life (${process.version} here), and starts anyway`, async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    const { configFile } = await writeConfig(dir, t);
    const p = spawnAgent(configFile);
    await p.started;
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
    const warned = p.logs.filter((l) => l.event === 'node_end_of_life');
    const expected = nodeEndOfLife(process.version, new Date());
    // This machine's Node 20 must take the WARN branch.
    if (process.version.startsWith('v20.')) expect(expected).not.toBeNull();
    if (expected) {
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({ levelWord: 'warn', node: process.version, end_of_life: expected.endOfLife });
      // Before the agent's start line: the first thing an operator reads.
      expect(p.logs.findIndex((l) => l.event === 'node_end_of_life')).toBeLessThan(p.logs.findIndex((l) => l.event === 'started'));
    } else {
      expect(warned).toEqual([]);
    }
  });
});
