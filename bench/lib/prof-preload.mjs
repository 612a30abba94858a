// Preloaded into the agent (`node --import`) when the bench profiles it: the
// same V8 sampling profiler as `node --cpu-prof`, but the profile is written
// on SIGUSR2 instead of at exit, so it does not depend on a clean shutdown and
// covers exactly the shipping phase.
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_PROFILE_OUT;
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 500 }, () => session.post('Profiler.start')));
process.on('SIGUSR2', () => {
  session.post('Profiler.stop', (err, res) => {
    if (!err && out) writeFileSync(out, JSON.stringify(res.profile));
  });
});
