// The batches under way per Data Source, for the pipeline's room: those of
// a parked Data Source wait for its park (in memory while the disk queue
// has no room) and do not count as room taken, or one misnamed directory
// with a backlog larger than the queue stopped every other one; instead
// its files wait in the spool once it holds a few (pipeline.ts paused).
export class ParkedHold {
  private readonly byDs = new Map<string, number>();

  constructor(
    /** Parked Data Sources (and those refused while the budget's park may be theirs: Sender.refusedDataSources). */
    private readonly parkedNow: () => ReadonlySet<string>,
    private readonly onParkedDone?: () => void,
  ) {}

  add(ds: string, n: 1 | -1): void {
    const left = (this.byDs.get(ds) ?? 0) + n;
    if (left === 0) this.byDs.delete(ds);
    else this.byDs.set(ds, left);
    if (n < 0 && this.onParkedDone && this.parkedNow().has(ds)) this.onParkedDone();
  }

  /** Batches under way of the parked Data Sources. */
  held(): number {
    let n = 0;
    for (const ds of this.parkedNow()) n += this.byDs.get(ds) ?? 0;
    return n;
  }

  /** `ds` is parked and has at least `bound` batches under way. */
  holds(ds: string, bound: number): boolean {
    return (this.byDs.get(ds) ?? 0) >= bound && this.parkedNow().has(ds);
  }

  /** Batches under way of the Data Sources in `ds`. */
  count(ds: ReadonlySet<string>): number {
    let n = 0;
    for (const d of ds) n += this.byDs.get(d) ?? 0;
    return n;
  }
}
