// `spoolship clusters list|config|rebalance|add-replica|remove-replica`
// (docs/clusters.md). This module parses flags and wires the pieces of
// src/clusters together; the weight math, validation, rendering and the
// read-modify-write live there.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseCommandArgs, type CliIo, type Command } from '../command.js';
import { EXIT_FAILURE, EXIT_OK, UsageError } from '../../errors.js';
import { parsePositiveInt, parseRoleWeights, parseSets } from '../../clusters/args.js';
import { ClusterClient, DEFAULT_REQUEST_TIMEOUT_MS } from '../../clusters/client.js';
import { proxyRoute } from '../../config/proxy.js';
import { readTlsMaterial } from '../../net/setup.js';
import { confirm } from '../../clusters/confirm.js';
import { findCluster, modifyCluster, type ModifyOutcome } from '../../clusters/modify.js';
import type { ClusterListing } from '../../clusters/types.js';
import type { Intent } from '../../clusters/plan.js';
import { createProgress } from '../../clusters/progress.js';
import { renderClusters, renderConfiguration } from '../../clusters/render.js';
import { resolveTarget } from '../../clusters/target.js';
import { waitUntilSettled } from '../../clusters/wait.js';

const OPTIONS = {
  org: { type: 'string' },
  cluster: { type: 'string' },
  token: { type: 'string' },
  'base-url': { type: 'string' },
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
  'dry-run': { type: 'boolean' },
  wait: { type: 'boolean' },
  force: { type: 'boolean' },
  set: { type: 'string', multiple: true },
  even: { type: 'string', multiple: true },
  size: { type: 'string' },
  weight: { type: 'string', multiple: true },
  replica: { type: 'string' },
  'timeout-ms': { type: 'string' },
  'wait-timeout-ms': { type: 'string' },
  'poll-interval-ms': { type: 'string' },
} as const;

type Flags = ReturnType<typeof parseCommandArgs<typeof OPTIONS>>['values'];

// Every verb takes the synopsis' flags (docs/clusters.md): a script may pass
// --yes to all of them. `list` and `config` only read, so --yes, --dry-run and
// --force change nothing there; `list` shows only --cluster's cluster and,
// with --wait, lists once it (or every cluster) has settled.
const COMMON = ['org', 'token', 'base-url', 'config', 'json', 'timeout-ms', 'cluster', 'yes', 'dry-run', 'wait', 'force', 'wait-timeout-ms', 'poll-interval-ms'];
const VERBS: Record<string, string[]> = {
  list: COMMON,
  config: COMMON,
  rebalance: [...COMMON, 'set', 'even'],
  'add-replica': [...COMMON, 'size', 'weight'],
  'remove-replica': [...COMMON, 'replica'],
};

const DEFAULT_WAIT_TIMEOUT_MS = 10 * 60 * 1000; // replica adds take minutes on the platform
const DEFAULT_POLL_INTERVAL_MS = 2_000;

const USAGE = `Usage: spoolship clusters <verb> [options]

Verbs:
  list                             clusters: provider/region, engine, replicas (size, state), weights per role, flags
  config                           regions, replica sizes and roles per provider
  rebalance --cluster ID (--set ROLE=REPLICA:W,... | --even ROLE)
                                   change weights; replicas not listed keep theirs
  add-replica --cluster ID --size CPU-MEM [--weight ROLE=W ...]
                                   add a replica (default: reader an even share, writer 0, copyjob 1)
  remove-replica --cluster ID --replica NAME
                                   remove a replica; its share goes to the others in proportion

Options:
  --org ORG              organization (else clusters.org)
  --token T              org-admin token (else SPOOLSHIP_ADMIN_TOKEN, else clusters.token)
  --base-url URL         API host (else api.base_url)
  -c, --config FILE      config file to read org, token and base URL from
  --json                 print the server's response (list, config) or {"plan", "response"}
  --cluster ID           the cluster to change; with list, the only one shown
  -y, --yes              apply without asking (required when stdin is not a terminal)
  --dry-run              show the plan, send nothing
  --force                skip the sum rules (writer/reader 100, copyjob 1 per replica)
  --wait                 after the change, wait until no operation is in progress and every replica runs
                         (list: waits so for --cluster's cluster, or for every cluster, then lists)
  --wait-timeout-ms N    give up waiting after N ms (default ${DEFAULT_WAIT_TIMEOUT_MS}); exit 1
  --poll-interval-ms N   poll the listing every N ms while waiting (default ${DEFAULT_POLL_INTERVAL_MS})
  --timeout-ms N         per HTTP request (default ${DEFAULT_REQUEST_TIMEOUT_MS})

list and config only read: --yes, --dry-run and --force change nothing there (config ignores
--cluster and --wait too).

Exit codes: 0 done; 1 refused by the cluster (busy, cannot scale), API error, conflict, wait timeout,
or the change was declined; 2 bad flags or a change that fails validation (nothing was sent).
`;

function parse(argv: string[]): { verb: string; flags: Flags } {
  const { values, positionals } = parseCommandArgs('clusters', argv, OPTIONS, true);
  const [verb, ...extra] = positionals;
  if (!verb || !VERBS[verb]) {
    throw new UsageError(`${verb ? `unknown verb '${verb}'` : 'missing verb'}; use one of: ${Object.keys(VERBS).join(', ')}`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'; see 'spoolship clusters --help'`);
  const allowed = VERBS[verb]!;
  for (const name of Object.keys(values)) {
    if (!allowed.includes(name)) throw new UsageError(`--${name} is not an option of 'clusters ${verb}'; see 'spoolship clusters --help'`);
  }
  return { verb, flags: values };
}

function required(flags: Flags, name: 'cluster' | 'size' | 'replica', verb: string): string {
  const v = flags[name];
  if (!v) throw new UsageError(`clusters ${verb} needs --${name}`);
  return v;
}

function intentOf(verb: string, flags: Flags): Intent {
  if (verb === 'rebalance') {
    const sets = parseSets(flags.set ?? []);
    const even = flags.even ?? [];
    if (Object.keys(sets).length === 0 && even.length === 0) throw new UsageError('clusters rebalance needs --set ROLE=REPLICA:W,... or --even ROLE');
    const both = even.filter((r) => Object.hasOwn(sets, r));
    if (both.length > 0) throw new UsageError(`role '${both[0]}' is given to both --set and --even; use one`);
    return { verb, sets, even };
  }
  if (verb === 'add-replica') return { verb, size: required(flags, 'size', verb), weights: parseRoleWeights(flags.weight ?? []) };
  return { verb: 'remove-replica', replica: required(flags, 'replica', verb) };
}

const printJson = (io: CliIo, value: unknown) => io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
const colorFor = (io: CliIo, out: { isTTY?: boolean }) => Boolean(out.isTTY) && !io.env.NO_COLOR;

async function run(argv: string[], io: CliIo): Promise<number> {
  const { verb, flags } = parse(argv);
  const modifying = verb !== 'list' && verb !== 'config';
  const clusterId = modifying ? required(flags, 'cluster', verb) : '';
  const intent = modifying ? intentOf(verb, flags) : null;
  const timeoutMs = parsePositiveInt('--timeout-ms', flags['timeout-ms'], DEFAULT_REQUEST_TIMEOUT_MS);
  const wait = {
    timeoutMs: parsePositiveInt('--wait-timeout-ms', flags['wait-timeout-ms'], DEFAULT_WAIT_TIMEOUT_MS),
    pollIntervalMs: parsePositiveInt('--poll-interval-ms', flags['poll-interval-ms'], DEFAULT_POLL_INTERVAL_MS),
  };
  // Decided before any request: without a terminal nobody can answer the question.
  if (modifying && !flags.yes && !flags['dry-run'] && !io.stdin.isTTY) {
    throw new UsageError(`clusters ${verb} changes production traffic; stdin is not a terminal, so pass --yes to apply (or --dry-run to only see the plan)`);
  }
  const target = resolveTarget({ org: flags.org, token: flags.token, baseUrl: flags['base-url'], configFile: flags.config }, io.env, io.cwd);
  for (const w of target.warnings) io.stderr.write(`spoolship clusters: warning: ${w}\n`);
  const client = new ClusterClient({ ...target, timeoutMs, route: proxyRoute(target.proxy, io.env, target.baseUrl), tls: await readTlsMaterial(target.tlsFiles) });
  try {
    if (!intent) {
      if (verb === 'list' && flags.wait) {
        await waitUntilSettled(() => client.listClusters(), flags.cluster ?? null, { ...wait, now: Date.now, sleep: (ms) => sleep(ms), progress: createProgress(io.stderr), afterChange: false });
      }
      return await show(verb, client, { org: target.org, clusterId: verb === 'list' ? (flags.cluster ?? null) : null }, Boolean(flags.json), io);
    }
    const planOut = flags.json ? io.stderr : io.stdout;
    const outcome = await modifyCluster(
      client,
      intent,
      { org: target.org, clusterId, force: Boolean(flags.force), dryRun: Boolean(flags['dry-run']) },
      { planOut, color: colorFor(io, planOut), confirm: flags.yes || flags['dry-run'] ? null : (q) => confirm(q, io.stdin, io.stderr) },
    );
    report(outcome, Boolean(flags.json), Boolean(flags.wait), io);
    if (outcome.kind === 'declined') return EXIT_FAILURE;
    if (outcome.kind === 'applied' && flags.wait) {
      const progress = createProgress(io.stderr);
      await waitUntilSettled(() => client.listClusters(), clusterId, { ...wait, now: Date.now, sleep: (ms) => sleep(ms), progress, afterChange: true });
    }
    return EXIT_OK;
  } finally {
    await client.close();
  }
}

/** `list` and `config`: the server's object as JSON, or a table; `list --cluster` keeps that cluster's entry alone. */
async function show(verb: string, client: ClusterClient, { org, clusterId }: { org: string; clusterId: string | null }, json: boolean, io: CliIo): Promise<number> {
  const color = colorFor(io, io.stdout);
  if (verb === 'list') {
    const listing = onlyCluster(await client.listClusters(), org, clusterId);
    if (json) printJson(io, listing);
    else io.stdout.write(renderClusters(listing, org, { color }));
  } else {
    const cfg = await client.getConfiguration();
    if (json) printJson(io, cfg);
    else io.stdout.write(renderConfiguration(cfg, { color }));
  }
  return EXIT_OK;
}

function onlyCluster(listing: ClusterListing, org: string, clusterId: string | null): ClusterListing {
  return clusterId === null ? listing : { ...listing, clusters: [findCluster(listing.clusters, { clusterId, org })] };
}

function report(outcome: ModifyOutcome, json: boolean, waiting: boolean, io: CliIo): void {
  if (json) {
    const response = outcome.kind === 'applied' ? outcome.response : null;
    printJson(io, { plan: { ...outcome.plan, replanned: outcome.kind !== 'dry-run' && outcome.replanned }, response });
  }
  const msg =
    outcome.kind === 'dry-run'
      ? 'dry run: nothing was sent'
      : outcome.kind === 'unchanged'
        ? 'nothing to change: the cluster already has these weights; nothing was sent'
        : outcome.kind === 'declined'
        ? 'not applied: nothing was sent'
        : acceptedMessage(outcome.response, waiting);
  (json ? io.stderr : io.stdout).write(`${msg}\n`);
}

function acceptedMessage(response: unknown, waiting: boolean): string {
  const r = response as { operation?: string; cluster_id?: string; new_replica?: { name?: string; state?: string }; removed_replica?: string };
  const detail = r.new_replica ? `; new replica ${r.new_replica.name} is ${r.new_replica.state}` : r.removed_replica ? `; removing ${r.removed_replica}` : '';
  const next = waiting ? '' : " (it completes asynchronously: --wait, or 'spoolship clusters list', shows when)";
  return `accepted: ${r.operation} on cluster ${r.cluster_id}${detail}${next}`;
}

const command: Command = {
  name: 'clusters',
  summary: 'manage dedicated clusters (list, config, rebalance, replicas)',
  usage: USAGE,
  run,
};
export default command;
