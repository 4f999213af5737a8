// Loaded with `--import` (NODE_OPTIONS may carry it; node 20 refuses --cpu-prof there): SIGUSR2
// starts the V8 sampling profiler, the next SIGUSR2 stops it and writes
// $A2A_CPU_PROF_DIR/<pid>-<n>.cpuprofile, so a profile covers the measured window only.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.A2A_CPU_PROF_DIR ?? '.';
const intervalUs = Number(process.env.A2A_CPU_PROF_INTERVAL_US ?? 250);
const session = new Session();
session.connect();
let running = false;
let n = 0;
process.on('SIGUSR2', () => {
  if (!running) {
    running = true;
    session.post('Profiler.enable', () =>
      session.post('Profiler.setSamplingInterval', { interval: intervalUs }, () => session.post('Profiler.start')),
    );
    return;
  }
  running = false;
  session.post('Profiler.stop', (error, result) => {
    if (error) return;
    const file = join(dir, `${process.pid}-${n++}.cpuprofile`);
    writeFileSync(file, JSON.stringify(result.profile));
    writeFileSync(`${file}.done`, '');
  });
});
