// ONNX Runtime's own per-node times on one model, sequential, one inter-op
// thread and INTRA intra-op threads:
//   node ort_profile.js MODEL RUNS INTRA NAME=FEED.npy...
// prints one JSON object {"node output name": median microseconds, ...}
// from ONNX Runtime's profiler (its "_kernel_time" events), with the
// suffix it adds to nodes it rewrote into its blocked layout removed, so
// that names match weft's trace (layers.py). Needs onnxruntime-node on
// NODE_PATH.
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const {readFeeds, median} = require('./npy.js');

(async () => {
  const [model, runs, intra, ...feedArgs] = process.argv.slice(2);
  const feeds = readFeeds(ort, feedArgs);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-'));
  const session = await ort.InferenceSession.create(model, {
    interOpNumThreads: 1, intraOpNumThreads: Number(intra),
    executionMode: 'sequential',
    enableProfiling: true, profileFilePrefix: path.join(dir, 'profile')});
  for (let i = 0; i < Number(runs); ++i) await session.run(feeds);
  await session.release();  // Writes the profile.
  const file = fs.readdirSync(dir).find(f => f.endsWith('.json'));
  const events = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  fs.rmSync(dir, {recursive: true});
  const times = {};
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.replace(/(_nchwc)?_kernel_time$/, '');
    (times[name] = times[name] || []).push(e.dur);
  }
  const result = {};
  for (const [name, values] of Object.entries(times)) result[name] = median(values);
  console.log(JSON.stringify(result));
})().catch(e => { console.error(e); process.exit(1); });
