// ONNX Runtime's latency on one model at each (inter, intra) setting.
//   node ort_bench.js MODEL REPEAT NAME=FEED.npy...
// prints one JSON object: {"inter,intra": median ms, ...}. Inter-op
// threads only matter in ONNX Runtime's parallel execution mode, used when
// inter > 1. Needs onnxruntime-node on NODE_PATH.
const ort = require('onnxruntime-node');
const {readFeeds, median} = require('./npy.js');

(async () => {
  const [model, repeat, ...feedArgs] = process.argv.slice(2);
  const feeds = readFeeds(ort, feedArgs);
  const result = {};
  for (const inter of [1, 2]) {
    for (const intra of [1, 2]) {
      const session = await ort.InferenceSession.create(model, {
        interOpNumThreads: inter, intraOpNumThreads: intra,
        executionMode: inter > 1 ? 'parallel' : 'sequential'});
      for (let i = 0; i < 3; ++i) await session.run(feeds);
      const times = [];
      for (let i = 0; i < Number(repeat); ++i) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      result[`${inter},${intra}`] = median(times);
      await session.release();
    }
  }
  console.log(JSON.stringify(result));
})().catch(e => { console.error(e); process.exit(1); });
