// docs/configuration.md's table of every key is held to the schema (the one
// declaration of each key, src/config/schema.ts): a key added without its
// row, a row for a key that does not exist, or a default the docs state
// differently fails here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { Field } from '../../src/config/fields.js';
import { keyPaths, SCHEMA, type Section } from '../../src/config/schema.js';
import { ROOT } from './helpers.js';

function fieldAt(keyPath: string): Field {
  let node: Section | Field = SCHEMA;
  for (const part of keyPath.split('.')) node = (node as Section)[part]!;
  return node as Field;
}

/** Rows of the table under "## Every key": key -> its default column. */
function docRows(): Map<string, string> {
  const text = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
  const section = text.slice(text.indexOf('## Every key'));
  const table = section.slice(section.indexOf('| key | default | meaning |'));
  const rows = new Map<string, string>();
  for (const line of table.split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const [, keyCell, defaultCell] = line.split('|').map((c) => c.trim());
    rows.set(keyCell!.replace(/`/g, ''), defaultCell!);
  }
  return rows;
}

describe("docs/configuration.md's key table", () => {
  const rows = docRows();

  it('has a row for every key of the schema, in its order, and none for a key that does not exist', () => {
    expect([...rows.keys()]).toEqual(keyPaths());
  });

  it("states each key's default as the schema declares it", () => {
    const wrong: string[] = [];
    for (const [key, cell] of rows) {
      const field = fieldAt(key);
      if (/^none\b/.test(cell)) {
        if (field.defaultValue !== null) wrong.push(`${key}: docs say none, schema ${JSON.stringify(field.defaultValue)}`);
        continue;
      }
      const written = /^`([^`]*)`/.exec(cell)?.[1];
      // An environment variable's value ($SPOOLSHIP_TOKEN) is not a literal.
      if (written === undefined || written.startsWith('$')) continue;
      const r = field.parse(parse(written) as unknown, { cwd: '/', baseDir: '/' });
      const expected = written.startsWith('./') ? path.resolve('/', written) : field.defaultValue;
      if (!r.ok || JSON.stringify(r.value) !== JSON.stringify(expected)) wrong.push(`${key}: docs say ${written}, schema ${JSON.stringify(field.defaultValue)}`);
    }
    expect(wrong).toEqual([]);
  });
});
