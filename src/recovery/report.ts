// What start-up found damaged or old in the state_dir, said once, by name
// (README "Integrity of state"): never skipped silently.
import path from 'node:path';
import type { Logger } from '../log.js';
import type { Recovery } from '../state/store.js';

const AFFECTED_SHOWN = 20;

export function reportRecovery(rec: Recovery, stateDir: string, log: Logger): void {
  const cp = path.join(stateDir, 'checkpoint.json');
  if (rec.rebuiltFromJournals) {
    const affected = rec.affectedFiles.slice(0, AFFECTED_SHOWN);
    log.error(
      { event: 'state_corrupt', what: 'checkpoint', file: cp, files: [cp, `${cp}.prev`], problem: rec.checkpointProblem, rebuilt_from: 'journals', affected, affected_files: rec.affectedFiles.length },
      'checkpoint.json and checkpoint.json.prev both failed their checks; the state is rebuilt from the journals: the files they follow resume at read_from (from 0 where they do not go back to the first byte), and every file they do not name is read again from its start whatever start_at says (duplicates, never a gap)',
    );
  }
  if (rec.usedPrevCheckpoint) {
    log.error(
      { event: 'state_corrupt', what: 'checkpoint', file: cp, problem: rec.checkpointProblem },
      'checkpoint.json failed its check; recovered from checkpoint.json.prev and the journals (batches since may be sent again; no line is skipped)',
    );
  }
  if (rec.upgradedCheckpoint) log.warn({ event: 'checkpoint_upgraded', state_dir: stateDir }, 'checkpoint in the previous format (version 1, no CRC) read; it is rewritten as version 2 (an older spoolship cannot read it)');
  // docs/delivery.md "Integrity of state": a torn tail is cut quietly (the normal trace of a kill -9), so INFO.
  if (rec.tornJournal) log.info({ event: 'journal_torn_tail' }, 'journal had a torn tail (crash during a write); cut it off');
  // What the lost records can touch, by Data Source and spool file: at most
  // AFFECTED_SHOWN files named (a state of thousands would drown the line).
  const affected = rec.affectedFiles.slice(0, AFFECTED_SHOWN);
  const datasources = [...new Set(rec.affectedFiles.map((f) => f.datasource))].sort();
  for (const bad of rec.corruptJournal) {
    log.error(
      { event: 'state_corrupt', what: 'journal', file: bad.file, bytes: [bad.start, bad.end], datasources, affected, affected_files: rec.affectedFiles.length },
      'journal damaged (not a torn tail): the records in these bytes are lost, the ones after them were read; the affected ranges of these files are sent again (resend, and from read_from on), no line is skipped',
    );
  }
}
