// ONNX Runtime's latency on one model at each (inter, intra) setting.
//   node ort_bench.js MODEL REPEAT NAME=FEED.npy...
// prints one JSON object: {"inter,intra": median ms, ...}. Inter-op
// threads only matter in ONNX Runtime's parallel execution mode, used when
// inter > 1. Needs onnxruntime-node on NODE_PATH.
const fs = require('fs');
const ort = require('onnxruntime-node');

// A little-endian .npy file (version 1 or 2) as an ort.Tensor.
function readNpy(path) {
  const buf = fs.readFileSync(path);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr': *'([^']+)'/.exec(header)[1];
  const shape = /'shape': *\(([^)]*)\)/.exec(header)[1]
      .split(',').map(s => s.trim()).filter(s => s).map(Number);
  const data = buf.buffer.slice(buf.byteOffset + start,
                                buf.byteOffset + buf.length);
  const types = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
                 '<i4': ['int32', Int32Array], '<f8': ['float64', Float64Array]};
  const [type, Array] = types[descr];
  return new ort.Tensor(type, new Array(data), shape);
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]
                      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

(async () => {
  const [model, repeat, ...feedArgs] = process.argv.slice(2);
  const feeds = {};
  for (const arg of feedArgs) {
    const eq = arg.indexOf('=');
    feeds[arg.slice(0, eq)] = readNpy(arg.slice(eq + 1));
  }
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
