// Aligned text tables. Widths are measured on the plain text and colour is
// applied after padding, so ANSI codes never shift a column.

export type Color = 'green' | 'yellow' | 'red' | 'dim' | 'bold';

export interface Cell {
  text: string;
  color?: Color;
}

const ANSI: Record<Color, [string, string]> = {
  green: ['\x1b[32m', '\x1b[39m'],
  yellow: ['\x1b[33m', '\x1b[39m'],
  red: ['\x1b[31m', '\x1b[39m'],
  dim: ['\x1b[2m', '\x1b[22m'],
  bold: ['\x1b[1m', '\x1b[22m'],
};

export function paint(text: string, color: Color | undefined, enabled: boolean): string {
  if (!enabled || !color || text === '') return text;
  const [on, off] = ANSI[color];
  return `${on}${text}${off}`;
}

export interface TableOptions {
  color: boolean;
  /** Columns (by index) aligned right: numbers. */
  right?: ReadonlySet<number>;
}

export function renderTable(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | Cell>>, opts: TableOptions): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'string' ? { text: c } : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.text.length ?? 0)));
  const line = (row: readonly Cell[]): string =>
    row
      .map((c, i) => {
        const pad = ' '.repeat(widths[i]! - c.text.length);
        const text = paint(c.text, c.color, opts.color);
        return opts.right?.has(i) ? pad + text : text + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(header.map((h) => ({ text: h, color: 'bold' as const }))), ...cells.map(line)].join('\n') + '\n';
}
