// Text from outside (file and directory names, server answers) shown to a
// person on a terminal: control characters escaped, so a file named with
// ESC sequences, BEL, CR or LF cannot redraw the screen or forge lines.
// Logs (JSON) and `--json` output escape them by their own format.

/** `text` with C0/C1 control characters and DEL escaped (\t, \r, \n by name, others as \uXXXX). */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    if (c === '\t') return '\\t';
    if (c === '\r') return '\\r';
    if (c === '\n') return '\\n';
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}
