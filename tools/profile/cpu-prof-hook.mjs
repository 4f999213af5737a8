// Loaded with `--import` (NODE_OPTIONS may carry it; node 20 refuses --cpu-prof there): SIGUSR2
// starts the V8 sampling profiler, the next SIGUSR2 stops it and writes
// $A2A_CPU_PROF_DIR/<pid>-<n>.cpuprofile, so a profile covers the measured window only.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.A2A_CPU_PROF_DIR ?? '.';
const intervalUs = Number(process.env.A2A_CPU_PROF_INTERVAL_US ?? 250);
// A2A_HEAP_PROF=1: V8's sampling heap profiler runs over the same window (<pid>-<n>.heapprofile:
// where the bytes the collector then has to reclaim were allocated).
const heap = process.env.A2A_HEAP_PROF === '1';
// A2A_HEAP_PROF_SURVIVORS=1: only objects that outlived a young-generation collection, the ones
// each scavenge copies (what a collector's time per task grows with), not every allocation.
const survivors = process.env.A2A_HEAP_PROF_SURVIVORS === '1';
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
    if (heap) session.post('HeapProfiler.enable', () => session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !survivors }));
    return;
  }
  running = false;
  if (heap) {
    const at = n;
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (!error) writeFileSync(join(dir, `${process.pid}-${at}.heapprofile`), JSON.stringify(result.profile));
    });
  }
  session.post('Profiler.stop', (error, result) => {
    if (error) return;
    const file = join(dir, `${process.pid}-${n++}.cpuprofile`);
    writeFileSync(file, JSON.stringify(result.profile));
    writeFileSync(`${file}.done`, '');
  });
});
