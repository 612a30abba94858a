// The rule for a Data Source name: letters, digits and _, not starting with
// a digit, at most 255 characters (the platform's). The spool's directories,
// spool.sources and `send -d` are held to it alike.
export const DATASOURCE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The platform's longest Data Source name. */
export const MAX_DATASOURCE_NAME = 255;

export function isDataSourceName(name: string): boolean {
  return name.length <= MAX_DATASOURCE_NAME && DATASOURCE_NAME.test(name);
}
