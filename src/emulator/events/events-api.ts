// POST /v0/events, in the order the platform applies its rules:
// method -> auth and token scope (admit(), before any of the body is read) ->
// rate limit -> faults -> name -> encoding -> size -> markers -> creation of a
// new Data Source (datasources.ts) -> insert.
// Each step either answers or passes on; the result is a value the HTTP layer
// carries out (see outcome.ts).
import { createHash } from 'node:crypto';
import { DATASOURCE_NAME_RE, MAX_DATASOURCE_NAME_CHARS } from '../faults.js';
import type { FaultPicker } from '../fault-picker.js';
import type { RateDecision, SlidingWindowLimiter } from '../rate-limiter.js';
import type { EmuRequest, EmuRequestHead } from '../types.js';
import type { DataSourceCatalog } from './datasources.js';
import { decodeEventsBody, tooLarge } from './decode.js';
import { insertRows, type Inserter } from './insert.js';
import { jsonError, type EventsOutcome, type EventsResult } from './outcome.js';
import { splitNdjson, splitSingleJson } from './rows.js';

export interface EventsApiDeps {
  /** DATASOURCE:APPEND and CREATE. */
  tokens: ReadonlySet<string>;
  /** DATASOURCE:APPEND only: Data Sources that exist. */
  appendTokens: ReadonlySet<string>;
  foreignToken: string;
  datasources: DataSourceCatalog;
  limiter: SlidingWindowLimiter;
  faults: FaultPicker;
  maxBodyBytes: number;
  validateRows: boolean;
  inserter: Inserter;
  delay(delayMs: number): Promise<void>;
  /** Hash each decoded body for the request records (tests: the same batch must come back as the same bytes). */
  hashBodies?: boolean;
}

export interface EventsApi {
  /**
   * The checks that need no body (method, token). A non-null result is the
   * answer, given without reading the body: a caller without a valid token
   * cannot make the emulator read, buffer or decode anything.
   */
  admit(req: EmuRequestHead): EventsResult | null;
  /** The rest of the rules, for a request admit() let through. */
  handle(req: EmuRequest): Promise<EventsResult>;
}

export function createEventsApi(deps: EventsApiDeps): EventsApi {
  const admit = (req: EmuRequestHead): EventsResult | null => {
    const name = req.query.get('name');
    if (req.method !== 'POST') return { outcome: jsonError(405, `${req.method} is not allowed on /v0/events; use POST`, { allow: 'POST' }), name, decodedBytes: null };
    const auth = checkAuth(req.headers.authorization, deps);
    if (auth.kind === 'refused') return { outcome: auth.outcome, name, decodedBytes: null };
    if (auth.scope === 'append' && name !== null && DATASOURCE_NAME_RE.test(name) && !deps.datasources.exists(name)) {
      const message = `Data Source ${JSON.stringify(name)} does not exist and the token has DATASOURCE:APPEND only; create it first or use a token with DATASOURCE:CREATE`;
      return { outcome: jsonError(403, message), name, decodedBytes: null };
    }
    return null;
  };
  const handle = async (req: EmuRequest): Promise<EventsResult> => {
    const name = req.query.get('name');
    // Hashed before any fault or rule answers, so that every attempt of a
    // batch can be told apart from another batch (only with hashBodies).
    const decodedSha1 = deps.hashBodies ? await decodedHash(req, deps.maxBodyBytes) : null;
    const result = (outcome: EventsOutcome, decodedBytes: number | null = null): EventsResult => ({ outcome, name, decodedBytes, decodedSha1 });

    const rate = deps.limiter.take();
    if (!rate.allowed) return result(rateLimited(rate, `${rate.limit} requests per second per organization`));

    const { action, markers } = deps.faults.pick(name);
    switch (action?.kind) {
      case 'status': {
        const headers: Record<string, string> = {};
        if (action.retry_after !== undefined) headers['retry-after'] = String(action.retry_after);
        if (action.location !== undefined) headers.location = action.location;
        return result(jsonError(action.status, `injected fault: HTTP ${action.status}; no data inserted`, headers));
      }
      case 'reset':
        return result({ kind: 'reset' });
      case 'hang':
        return result({ kind: 'hang' });
      case 'slow':
        await deps.delay(action.delay_ms);
        break;
      default:
        break;
    }

    const paramError = checkParams(req.query);
    if (paramError) return result(paramError);
    if (req.bodyOverflow) return result(toOutcome(tooLarge(deps.maxBodyBytes)));

    const decoded = await decodeEventsBody(req.headers['content-encoding'], req.body, deps.maxBodyBytes);
    if (!decoded.ok) return result(toOutcome(decoded));
    const body = decoded.body;
    const marker = markers.find((m) => body.includes(m));
    if (marker !== undefined) return result(jsonError(400, `rejected: the body contains the marker ${JSON.stringify(marker)}; no data inserted`), body.length);

    const rows = req.query.get('format') === 'json' ? splitSingleJson(body, deps.validateRows) : splitNdjson(body, deps.validateRows);
    // An APPEND-only token never gets here for a missing Data Source (admit()).
    const created = deps.datasources.ensure(name!);
    if (!created.allowed) {
      return result(rateLimited(created, `${created.limit} Data Source creations per minute per organization; "${name}" does not exist yet`), body.length);
    }
    const wait = isTrue(req.query.get('wait'));
    const outcome = await insertRows(deps.inserter, { name: name!, body, rows, action, wait });
    return result(outcome, body.length);
  };
  return { admit, handle };
}

type AuthResult = { kind: 'refused'; outcome: EventsOutcome } | { kind: 'ok'; scope: 'create' | 'append' };

function checkAuth(header: string | undefined, deps: EventsApiDeps): AuthResult {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  const token = match?.[1];
  const refuse = (status: number, message: string): AuthResult => ({ kind: 'refused', outcome: jsonError(status, message) });
  if (token === undefined) return refuse(403, 'missing token: send "Authorization: Bearer <token>" with a DATASOURCE:APPEND or CREATE token');
  if (token === deps.foreignToken) return refuse(404, "the token's Workspace does not belong to this region; use the API host of the token's region");
  if (deps.tokens.has(token)) return { kind: 'ok', scope: 'create' };
  if (deps.appendTokens.has(token)) return { kind: 'ok', scope: 'append' };
  return refuse(403, 'invalid token: it is unknown or lacks the DATASOURCE:APPEND / CREATE scope');
}

/** 429 with the platform's rate-limit headers; `what` names the budget. */
function rateLimited(rate: RateDecision & { allowed: false }, what: string): EventsOutcome {
  const seconds = String(rate.resetSeconds);
  return jsonError(429, `rate limit exceeded: ${what}; retry after ${seconds} s`, {
    'x-ratelimit-limit': String(rate.limit),
    'x-ratelimit-remaining': String(rate.remaining),
    'x-ratelimit-reset': seconds,
    'retry-after': seconds,
  });
}

function checkParams(query: URLSearchParams): EventsOutcome | null {
  const name = query.get('name');
  if (name === null || name === '') return jsonError(400, 'the "name" parameter is missing: give the Data Source name, e.g. ?name=events');
  if (!DATASOURCE_NAME_RE.test(name)) {
    const shown = name.length > 64 ? `${JSON.stringify(name.slice(0, 64))}... (${name.length} characters)` : JSON.stringify(name);
    return jsonError(
      400,
      `invalid Data Source name ${shown}: use letters, digits and _, do not start with a digit, at most ${MAX_DATASOURCE_NAME_CHARS} characters`,
    );
  }
  const wait = query.get('wait');
  if (wait !== null && !/^(true|false|1|0)$/i.test(wait)) return jsonError(400, `invalid "wait" value ${JSON.stringify(wait)}; use true or false`);
  const format = query.get('format');
  if (format !== null && format !== 'json' && format !== 'ndjson') {
    return jsonError(400, `invalid "format" value ${JSON.stringify(format)}; use json (one multi-line object) or omit it`);
  }
  return null;
}

function isTrue(v: string | null): boolean {
  return v !== null && /^(true|1)$/i.test(v);
}

function toOutcome(d: { status: number; message: string }): EventsOutcome {
  return jsonError(d.status, d.message);
}

export function sha1(data: Uint8Array): string {
  return createHash('sha1').update(data).digest('hex');
}

/** SHA-1 of the request's body decoded, or null when it does not decode. */
async function decodedHash(req: EmuRequest, maxBodyBytes: number): Promise<string | null> {
  if (req.bodyOverflow) return null;
  const decoded = await decodeEventsBody(req.headers['content-encoding'], req.body, maxBodyBytes).catch(() => null);
  return decoded?.ok ? sha1(decoded.body) : null;
}
