// Which Node.js lines spoolship runs on (README "Quick start"): 22 and 24.
// A line past its end of life still starts, with a WARN at `run` start
// (`node_end_of_life`), so an upgrade of spoolship never stops an agent on
// Node 20; it just no longer gets security fixes from the Node.js project.
// Pure, with the date passed in, so tests fake the version and the day.

/** End of life of each Node.js line spoolship may start on (the Node.js release schedule). */
const END_OF_LIFE: Readonly<Record<number, string>> = {
  20: '2026-04-30',
  21: '2024-06-01',
  22: '2027-04-30',
  23: '2025-06-01',
  24: '2028-04-30',
  25: '2026-06-01',
};

/** The line of `version` (`v20.20.2`) and its end of life when `now` is past it; null while it is supported or unknown (newer). */
export function nodeEndOfLife(version: string, now: Date): { major: number; endOfLife: string } | null {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  const endOfLife = END_OF_LIFE[major];
  if (endOfLife === undefined || now.getTime() < Date.parse(`${endOfLife}T00:00:00Z`)) return null;
  return { major, endOfLife };
}
