/**
 * Preloaded into a server under test by bench/allocation.js (`node --import …`): the first
 * SIGUSR2 starts V8's sampling heap profiler, counting objects that garbage collection has
 * already freed too (what a request allocates, not what it keeps); the second stops it and
 * writes the profile to `<RCPGW_BENCH_HEAPDIR>/<pid>.heapprofile`.
 */
import { Session } from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const session = new Session();
session.connect();
let sampling = false;

process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.enable', () =>
      session.post('HeapProfiler.startSampling', {
        samplingInterval: 512,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      }),
    );
    return;
  }
  sampling = false;
  session.post('HeapProfiler.stopSampling', (err, result) => {
    const dir = process.env.RCPGW_BENCH_HEAPDIR;
    if (err || !dir) return;
    const file = path.join(dir, `${process.pid}.heapprofile`);
    writeFileSync(`${file}.tmp`, JSON.stringify(result.profile));
    renameSync(`${file}.tmp`, file); // the reader never sees half a profile
  });
});
