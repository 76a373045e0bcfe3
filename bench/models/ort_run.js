// Runs one model once in ONNX Runtime and writes its first output as .npy.
//   node ort_run.js MODEL OUT.npy NAME=FEED.npy...
// Needs onnxruntime-node on NODE_PATH.
const fs = require('fs');
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy.js');

function writeNpy(path, tensor) {
  const header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${
      tensor.dims.join(', ')}${tensor.dims.length === 1 ? ',' : ''}), }`;
  const padded = header.padEnd(Math.ceil((header.length + 11) / 64) * 64 - 11) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(padded.length, 8);
  fs.writeFileSync(path, Buffer.concat([
    head, Buffer.from(padded, 'latin1'),
    Buffer.from(new Float32Array(tensor.data).buffer)]));
}

(async () => {
  const [model, out, ...feedArgs] = process.argv.slice(2);
  const feeds = {};
  for (const arg of feedArgs) {
    const eq = arg.indexOf('=');
    feeds[arg.slice(0, eq)] = readNpy(ort, arg.slice(eq + 1));
  }
  const session = await ort.InferenceSession.create(model);
  const results = await session.run(feeds);
  writeNpy(out, results[session.outputNames[0]]);
})();
