// One cold start in ONNX Runtime: session creation from the model's path,
// then the first and the second Run, each timed (ms), printed as one JSON
// line. For the time-to-first-result comparison (docs/BENCHMARKS.md).
//   node ort_cold.js MODEL NAME=FEED.npy...
// Needs onnxruntime-node on NODE_PATH.
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy.js');

(async () => {
  const [model, ...feedArgs] = process.argv.slice(2);
  const feeds = {};
  for (const arg of feedArgs) {
    const eq = arg.indexOf('=');
    feeds[arg.slice(0, eq)] = readNpy(ort, arg.slice(eq + 1));
  }
  const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;
  let t = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model);
  const create = ms(t);
  t = process.hrtime.bigint();
  await session.run(feeds);
  const first = ms(t);
  t = process.hrtime.bigint();
  await session.run(feeds);
  const second = ms(t);
  console.log(JSON.stringify({create, first, second}));
})();
