// Routing a path to its Data Source (src/spool/routes.ts).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Router } from '../../src/spool/routes.js';

describe('Router', () => {
  const spool = '/var/spool/spoolship';

  it('routes <spool.dir>/<datasource>/*.ndjson, exactly one level deep, to the directory name', () => {
    const r = new Router(spool, []);
    const cases: Array<[string, string | null]> = [
      [`${spool}/app/a.ndjson`, 'app'],
      [`${spool}/App_2/x.y.ndjson`, 'App_2'],
      [`${spool}/_x/a.ndjson`, '_x'],
      [`${spool}/app/a.json`, null], // not .ndjson
      [`${spool}/app/.hidden.ndjson`, null],
      [`${spool}/2app/a.ndjson`, null], // not a Data Source name
      [`${spool}/my-app/a.ndjson`, null],
      [`${spool}/a.ndjson`, null], // too shallow
      [`${spool}/app/sub/a.ndjson`, null], // too deep
      [`${spool}/../other/app/a.ndjson`, null],
      ['/var/spool/spoolship-other/app/a.ndjson', null], // a sibling directory with the same prefix
      [`${spool}//app/a.ndjson`, 'app'], // not normalized: still the same file
      [`${spool}/app/./a.ndjson`, 'app'],
    ];
    for (const [p, ds] of cases) expect(r.route(p), p).toBe(ds);
  });

  it('gives the same answer with a trailing separator on spool.dir', () => {
    const a = new Router(spool, []);
    const b = new Router(spool + path.sep, []);
    for (const p of [`${spool}/app/a.ndjson`, `${spool}/a.ndjson`, `${spool}/app/b/a.ndjson`]) expect(b.route(p)).toBe(a.route(p));
  });

  it('routes spool.sources globs first', () => {
    const r = new Router(spool, [{ datasource: 'from_glob', include: ['/var/log/app/**/*.json', `${spool}/app/special-*.ndjson`] }]);
    expect(r.route('/var/log/app/x/y.json')).toBe('from_glob');
    expect(r.route(`${spool}/app/special-1.ndjson`)).toBe('from_glob');
    expect(r.route(`${spool}/app/other.ndjson`)).toBe('app');
  });
});
