// `spoolship check-config [-c FILE]`: load the config exactly as `run` would,
// print the effective config (secrets as ***) on stdout and warnings on
// stderr (also before an error: a misspelt SPOOLSHIP_* may explain it);
// exit 0. An invalid config throws ConfigError, which main.ts prints
// as one `path: value: why` line per problem, exit 2.
import { stringify } from 'yaml';
import { ConfigError, EXIT_OK } from '../../errors.js';
import { loadConfig, redactConfig, type LoadedConfig } from '../../config/index.js';
import { affectedByUpgrade } from '../../config/affected.js';
import { scrub } from '../../config/redact.js';
import { otherCanRead, TOKEN_FILE_READABLE } from '../../sender/token.js';
import { checkLayout } from '../../spool/layout.js';
import { stateDirPathError } from '../../state/dir-trust.js';
import { parseCommandArgs, type Command } from '../command.js';
import { unreadableFiles } from '../../agent/preflight.js';

const usage = `Usage: spoolship check-config [-c FILE]

Validate the configuration and print the effective config: the file after
\${VAR} interpolation, SPOOLSHIP_* environment overrides and defaults, as
YAML. Sizes are shown in bytes, durations in milliseconds, relative paths
resolved, and secrets (api.token, clusters.token, the redis_url password)
as ***. Warnings go to stderr, among them where this release's changed
defaults touch what is on disk (a symlink in the spool that
spool.follow_symlinks no longer follows, a checkpoint in the previous
format; CHANGELOG).

Options:
  -c, --config FILE  the config file; default: $SPOOLSHIP_CONFIG, else
                     ./config/spoolship.yaml, else /etc/spoolship/spoolship.yaml
  -h, --help         show this help

Environment:
  SPOOLSHIP_<SECTION>__<KEY>  override one key, e.g. SPOOLSHIP_BATCH__LINGER_MS=250,
                              SPOOLSHIP_STATE_DIR=/var/lib/spoolship (read as YAML)
  SPOOLSHIP_TOKEN             default of api.token
  SPOOLSHIP_ADMIN_TOKEN       default of clusters.token

Exit codes: 0 valid; 2 invalid (every problem printed as 'path: value: why')
or bad usage.
`;

const SOURCE_NOTE: Record<LoadedConfig['source'], string> = {
  flag: 'named by -c',
  env: 'named by SPOOLSHIP_CONFIG',
  cwd: 'found in the working directory',
  system: 'the system-wide file',
  none: '',
};

/** The YAML printed on success; also used by docs and tests. */
export function renderEffectiveConfig(loaded: LoadedConfig): string {
  const head = loaded.file
    ? `# spoolship effective configuration, from ${loaded.file} (${SOURCE_NOTE[loaded.source]})`
    : '# spoolship effective configuration: no config file found; defaults and SPOOLSHIP_* variables';
  const note = '# sizes in bytes, durations in milliseconds, secrets shown as ***';
  // A secret interpolated into any key (not only the token keys) is shown as *** too.
  return scrub(`${head}\n${note}\n${stringify(redactConfig(loaded.config), { lineWidth: 0 })}`, loaded.secrets ?? []);
}

const command: Command = {
  name: 'check-config',
  summary: 'validate the config and print it with secrets redacted',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs('check-config', argv, {
      config: { type: 'string', short: 'c' },
    });
    const loaded = loadConfig({
      file: values.config ?? null,
      env: io.env,
      cwd: io.cwd,
      onWarning: (w) => io.stderr.write(`spoolship check-config: warning: ${w}\n`),
      tokenRequired: true,
    });
    // A file where state_dir should be: `run` refuses it (exit 2), so this does too.
    const stateDirError = await stateDirPathError(loaded.config.state_dir);
    if (stateDirError) throw stateDirError;
    // The files it names, as `run` reads them (agent/preflight.ts): an empty token file, one with a
    // character no header carries, a certificate that does not match its key. One not there yet is a warning.
    const embedded = loaded.config.api.base_url === 'embedded';
    const files = await unreadableFiles(embedded ? { ...loaded.config, api: { ...loaded.config.api, token_file: null } } : loaded.config, { skipMissing: true });
    if (files.length > 0) throw new ConfigError(files);
    io.stdout.write(renderEffectiveConfig(loaded));
    const layout = await checkLayout(loaded.config.spool.dir);
    if (layout.missing) io.stderr.write(`spoolship check-config: warning: spool.dir ${loaded.config.spool.dir} does not exist; the agent picks it up when it appears\n`);
    for (const dir of layout.skippedDirs) io.stderr.write(`spoolship check-config: warning: ${dir} is not a valid Data Source name ([A-Za-z_][A-Za-z0-9_]*, at most 255): its files are not read\n`);
    for (const w of await affectedByUpgrade(loaded.config)) io.stderr.write(`spoolship check-config: warning: ${w}\n`);
    const tokenFile = loaded.config.api.base_url === 'embedded' ? null : loaded.config.api.token_file;
    if (tokenFile !== null && (await otherCanRead(tokenFile))) io.stderr.write(`spoolship check-config: warning: ${tokenFile}: ${TOKEN_FILE_READABLE}\n`);
    return EXIT_OK;
  },
};
export default command;
