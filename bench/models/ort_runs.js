// ONNX Runtime Runs on request, for a driver that alternates them with
// weft's Runs in another process (paired_peer.py):
//   node ort_runs.js MODEL INTER INTRA NAME=FEED.npy...
// Makes the session (the parallel execution mode when INTER > 1, as
// ort_bench.js), runs it three times untimed and prints "ready"; then for
// each line "run K" on stdin runs K times back to back and prints the Runs'
// milliseconds on one line.
// Needs onnxruntime-node on NODE_PATH.
const ort = require('onnxruntime-node');
const readline = require('readline');
const {readFeeds} = require('./npy.js');

(async () => {
  const [model, inter, intra, ...feedArgs] = process.argv.slice(2);
  const feeds = readFeeds(ort, feedArgs);
  const session = await ort.InferenceSession.create(model, {
    interOpNumThreads: Number(inter), intraOpNumThreads: Number(intra),
    executionMode: Number(inter) > 1 ? 'parallel' : 'sequential'});
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  console.log('ready');
  for await (const line of readline.createInterface({input: process.stdin})) {
    const [verb, count] = line.trim().split(/\s+/);
    if (verb !== 'run') continue;
    const times = [];
    for (let i = 0; i < Number(count || 1); ++i) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push((Number(process.hrtime.bigint() - t0) / 1e6).toFixed(4));
    }
    console.log(times.join(' '));
  }
  await session.release();
})().catch(e => { console.error(e); process.exit(1); });
