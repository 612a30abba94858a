// docs/operations-cli.md's `status --json` example names the version the
// agent writes (it showed 1 after the format became 2, while its own table
// said 2).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATUS_VERSION } from '../../src/report/report.js';
import { ROOT } from '../config/helpers.js';

describe('docs/operations-cli.md', () => {
  it("the status --json example and the field table give the agent's STATUS_VERSION", () => {
    const text = readFileSync(path.join(ROOT, 'docs', 'operations-cli.md'), 'utf8');
    const example = /^ {2}"version": (\d+),$/m.exec(text);
    const row = /^\| `version` \| (\d+) /m.exec(text);
    expect([Number(example?.[1]), Number(row?.[1])]).toEqual([STATUS_VERSION, STATUS_VERSION]);
  });
});
