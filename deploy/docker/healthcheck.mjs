// The image's HEALTHCHECK: exit 0 when the agent's /healthz answers 200.
// The slim base image has no curl; Node's fetch does the request.
// SPOOLSHIP_HEALTHCHECK_URL overrides the address (admin.listen moved).
const url = process.env.SPOOLSHIP_HEALTHCHECK_URL || 'http://127.0.0.1:9464/healthz';
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
