// A token goes in an HTTP header (Authorization: Bearer ...). undici refuses
// a header value with a control character (a trailing \r from a file or
// variable saved with Windows line ends) or a character beyond Latin-1
// before anything is sent, and the request failed as a "network" error,
// retried forever. So such a token is a config error, named, at once (what
// a header can carry, a wrong token included, goes and is answered 401/403).

/** Why `token` cannot be sent as a bearer token, or null when it can (undici's rule: tab, 0x20-0x7E, 0x80-0xFF). */
export function tokenCharProblem(token: string): string | null {
  for (const ch of token) {
    const c = ch.codePointAt(0)!;
    const hex = `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) {
      const name = c === 0x0d ? '\\r (a carriage return: saved with Windows line ends?)' : c === 0x0a ? '\\n (a line feed)' : `${hex} (a control character)`;
      return `contains ${name}, which no HTTP header can carry; remove it`;
    }
    if (c > 0xff) return `contains a character beyond Latin-1 (${hex}), which no HTTP header can carry; check that the whole token, and only it, was copied`;
  }
  return null;
}
