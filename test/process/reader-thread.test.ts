// From 4 compression threads the built agent reads the spool in a thread of
// its own (src/spool/scan-reader.ts: the thread runs the line rules from
// their own source, which the bundle must keep intact): every line arrives
// once, CRLF and empty lines by the same rules, and the ranges' CRCs taken
// there are the ones crash re-forming checks, so a batch unanswered at a
// kill -9 is sent again as the very same bytes.
import { appendFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectByteIdenticalRetries } from '../support/byte-identical.js';
import { checkDelivery, kill9, lines, spawnAgent, startEmu, tempDir, waitFor, writeConfig } from './helpers.js';

describe('the reader thread (process)', () => {
  it('compression.threads 6: read in its own thread, every line once; a batch unanswered at a kill -9 is re-formed from its CRC-checked ranges byte for byte', async () => {
    const dir = await tempDir();
    const t = await startEmu(dir);
    // DEBUG: reader_thread_ready says when the thread takes the reads (the main thread does them until then).
    const paths = await writeConfig(dir, t, { compression: { threads: 6 }, batch: { max_bytes: 1_000_000 }, log: { level: 'debug' } });
    const file = path.join(paths.spoolDir, 'ev', 'app.ndjson');
    await mkdir(path.dirname(file), { recursive: true });
    // ~3 MB: reads of 1 MiB into batch buffers, a CRLF line and an empty one now and then (the rules after the thread's run).
    const count = 30_000;
    const text = lines('r', 0, count)
      .split('\n')
      .map((l, i) => (l && i % 997 === 0 ? `${l}\r` : l))
      .join('\n')
      .replace(/\n(?=\{"id":"r000000[0-9]{2}5)/g, '\n\n');
    // A few lines before the start; the rest once the thread reads, so that the thread reads them.
    const head = text.indexOf('\n', 20_000) + 1;
    writeFileSync(file, text.slice(0, head));
    const first = spawnAgent(paths.configFile);
    await first.started;
    expect(first.logs.find((l) => l.event === 'started')).toMatchObject({ compression_threads: 6, reader_thread: true });
    await waitFor(() => first.logs.some((l) => l.event === 'reader_thread_ready'), 'the reader thread taking the reads');
    // The head is answered; the requests with the rest hang.
    await waitFor(() => t.records.some((r) => r.outcome === 200), 'the head answered');
    t.emu.setFaults([{ kind: 'hang', p: 1 }]);
    appendFileSync(file, text.slice(head));
    await waitFor(() => t.records.some((r) => r.outcome === 'hang'), 'a request of the appended lines hanging');
    await kill9(first);
    t.emu.setFaults([]);
    const second = spawnAgent(paths.configFile);
    await second.started;
    const result = (await waitFor(async () => {
      const r = await checkDelivery(t, 'ev', 'r', count);
      return r.missing === 0 ? r : null;
    }, 'every line'))!;
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect({ missing: result.missing, unexpected: result.unexpected }).toEqual({ missing: 0, unexpected: 0 });
    expect(second.logs.filter((l) => l.event === 'resend_files_gone' || l.event === 'reader_thread_failed')).toEqual([]);
    expect(expectByteIdenticalRetries(t.records), 'the hung batch, re-formed and sent again by the second agent').toBeGreaterThanOrEqual(1);
  });
});
