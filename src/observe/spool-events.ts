// What the reading side tells operators: one log event per file discovered,
// truncated (copytruncate) or finished, a symlink not followed, the spool's
// layout changes (spool/layout.ts), and the lines and bytes read. A Data
// Source's directory or first file makes its metric series exist, at 0.
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { LayoutReporter } from '../spool/layout.js';
import type { SpoolerEvents } from '../spool/options.js';

/** Told when a read round found nothing to read (Linger implements it: a drained backlog's last batch goes sooner). */
export interface ReaderIdle {
  readerIdle(): void;
}

export function spoolEvents(o: { log: Logger; metrics: Metrics; linger: ReaderIdle; layout: Pick<LayoutReporter, 'report'> }): SpoolerEvents {
  const { log, metrics, linger, layout: reporter } = o;
  return {
    onDiscovered: (ds, file) => {
      metrics.knowDataSource(ds);
      log.info({ event: 'file_discovered', datasource: ds, file }, 'file discovered');
    },
    onTruncated: (ds, file) => {
      metrics.truncations.inc();
      log.warn({ event: 'file_truncated', datasource: ds, file }, 'file truncated (copytruncate): reading again from offset 0');
    },
    onFinished: (ds, file, deleted, gone) =>
      log.info({ event: 'file_finished', datasource: ds, file, deleted, gone }, deleted ? 'file fully shipped and deleted' : gone ? 'deleted file fully read' : 'rotated file fully read'),
    onIdle: () => linger.readerIdle(),
    onLayout: (layout) => {
      for (const ds of layout.dataSourceDirs) metrics.knowDataSource(ds);
      reporter.report(layout);
    },
    onListFailed: (dir, code) => log.warn({ event: 'spool_list_failed', dir, code }, 'a spool directory cannot be listed: its files are kept as they were; will retry at each scan'),
    onListRecovered: (dir) => log.info({ event: 'spool_list_recovered', dir }, 'a spool directory is listed again'),
    onUnreadable: (ds, file, code) =>
      log.warn({ event: 'file_unreadable', datasource: ds, file, code }, 'a spool file cannot be opened: its progress is kept and it is read on where it was once it can be; will retry at each scan'),
    onReadable: (ds, file) => log.info({ event: 'file_readable', datasource: ds, file }, 'a spool file that could not be opened is read again'),
    onReaderThreadFailed: (err) =>
      log.warn({ event: 'reader_thread_failed', err: err.message }, 'the reader thread could not start or stopped: files are read on the main thread from now on (nothing is lost; more CPU on the main thread)'),
    onDeleteFailed: (ds, file, code) =>
      log.warn(
        { event: 'file_delete_failed', datasource: ds, file, code },
        'on_complete: delete cannot delete a fully shipped file: it is kept (nothing is lost) and tried again at each scan; let the agent write to its directory',
      ),
    onReaderThreadReady: () => log.debug({ event: 'reader_thread_ready' }, 'the reader thread has started: it reads the spool files from now on'),
  };
}

/** spool.follow_symlinks: a link not followed (its target outside the spool, or a loop). */
export function symlinkSkipped(log: Logger): (file: string, target: string | null, why: string) => void {
  return (file, target, why) => log.warn({ event: 'symlink_skipped', file, target, why }, 'a symlink in the spool is not followed');
}

/** The batcher took lines of a Data Source. */
export function linesRead(metrics: Metrics): (ds: string, lines: number, bytes: number) => void {
  return (ds, lines, bytes) => {
    // Discovery made the series already; this covers a path that did not (cheap: a Set lookup per chunk).
    metrics.knowDataSource(ds);
    metrics.linesRead.inc({ datasource: ds }, lines);
    metrics.bytesRead.inc({ datasource: ds }, bytes);
  };
}
