// The image's HEALTHCHECK: exit 0 when the agent's /healthz answers 200.
// The slim base image has no curl; Node's fetch does the request.
// The address: a URL given as its argument, else the one admin.listen has
// through SPOOLSHIP_ADMIN__LISTEN (0.0.0.0 and [::] asked on loopback), else
// the image's default 0.0.0.0:9464. No variable of its own: every other
// SPOOLSHIP_* name is a config key, and the agent warns about unknown ones.
function target() {
  if (process.argv[2]) return process.argv[2];
  const listen = process.env.SPOOLSHIP_ADMIN__LISTEN ?? '0.0.0.0:9464';
  if (listen === '' || listen === '""') return null;
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at);
  const local = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
  return `http://${local}:${listen.slice(at + 1)}/healthz`;
}

const url = target();
if (url === null) {
  process.stderr.write('admin.listen is off (SPOOLSHIP_ADMIN__LISTEN is empty): there is no /healthz to check; run the container with --no-healthcheck\n');
  process.exit(1);
}
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
