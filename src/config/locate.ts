// Which file to read (docs/configuration.md): `-c FILE`, else SPOOLSHIP_CONFIG, else
// ./config/spoolship.yaml, else /etc/spoolship/spoolship.yaml. A file named
// explicitly (-c or SPOOLSHIP_CONFIG) must exist: silently falling back to
// defaults would run a different agent than the operator asked for.
import { statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';
import { CWD_CONFIG_FILE, SYSTEM_CONFIG_FILE } from './defaults.js';

/** How the file was chosen: -c, SPOOLSHIP_CONFIG, the working directory, /etc, or none found. */
export type ConfigSource = 'flag' | 'env' | 'cwd' | 'system' | 'none';

export interface LocateOptions {
  file?: string | null;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Defaults to /etc/spoolship/spoolship.yaml; tests point it elsewhere. */
  systemFile?: string;
}

export interface Located {
  file: string | null;
  source: ConfigSource;
  /** The candidates tried, in order (for the "no config file found" warning). */
  searched: string[];
}

export function locateConfig(opts: LocateOptions): Located {
  if (opts.file) return explicit(path.resolve(opts.cwd, opts.file), 'flag', '-c');
  const fromEnv = opts.env.SPOOLSHIP_CONFIG;
  if (fromEnv) return explicit(path.resolve(opts.cwd, fromEnv), 'env', 'SPOOLSHIP_CONFIG');
  const candidates: Array<[string, ConfigSource]> = [
    [path.resolve(opts.cwd, CWD_CONFIG_FILE), 'cwd'],
    [opts.systemFile ?? SYSTEM_CONFIG_FILE, 'system'],
  ];
  for (const [file, source] of candidates) {
    if (isFile(file)) return { file, source, searched: candidates.slice(0, 1 + candidates.findIndex(([f]) => f === file)).map(([f]) => f) };
  }
  return { file: null, source: 'none', searched: candidates.map(([f]) => f) };
}

function explicit(file: string, source: ConfigSource, named: string): Located {
  let kind: 'file' | 'dir' | 'missing';
  try {
    kind = statSync(file).isDirectory() ? 'dir' : 'file';
  } catch {
    kind = 'missing';
  }
  if (kind !== 'file') {
    const why = kind === 'dir' ? 'is a directory; name the YAML file inside it' : 'no such file; check the path (relative paths start at the working directory)';
    throw new ConfigError([{ path: named, value: file, why }]);
  }
  return { file, source, searched: [file] };
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
