// Runs each case of make_cases.py in ONNX Runtime (graph optimizations off)
// and writes its outputs as out_K.npy (out_K.json for strings) beside the
// inputs, or error.txt.
//   NODE_PATH=.../node_modules node ort_expected.js DIR
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// numpy descr -> [ort type, typed array]; bool travels as bytes.
const kTypes = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<f2': ['float16', Uint16Array], '|i1': ['int8', Int8Array],
  '<i2': ['int16', Int16Array], '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array], '|u1': ['uint8', Uint8Array],
  '<u2': ['uint16', Uint16Array], '<u4': ['uint32', Uint32Array],
  '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const v1 = buf[6] === 1;
  const headerLength = v1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (v1 ? 10 : 12) + headerLength;
  const header = buf.toString('latin1', v1 ? 10 : 12, start);
  const descr = /'descr': *'([^']+)'/.exec(header)[1];
  const shape = /'shape': *\(([^)]*)\)/.exec(header)[1]
      .split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const [type, TypedArray] = kTypes[descr];
  const bytes = new Uint8Array(buf.length - start);
  bytes.set(buf.subarray(start));
  let data = new TypedArray(bytes.buffer);
  if (type === 'bool') data = Array.from(data, (v) => v !== 0);
  return new ort.Tensor(type, data, shape);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(kTypes).find((k) => kTypes[k][0] === tensor.type);
  const dims = tensor.dims.join(', ') + (tensor.dims.length === 1 ? ',' : '');
  const header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${
      dims}), }`;
  const padded =
      header.padEnd(Math.ceil((header.length + 11) / 64) * 64 - 11) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(padded.length, 8);
  const body = tensor.type === 'bool' ?
      Buffer.from(Uint8Array.from(tensor.data, (v) => (v ? 1 : 0))) :
      Buffer.from(tensor.data.buffer, tensor.data.byteOffset,
                  tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(padded, 'latin1'), body]));
}

// Strings travel as JSON ({shape, data}): .npy holds them only as pickles.
function readJson(file) {
  const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
  return new ort.Tensor('string', saved.data, saved.shape);
}

function writeJson(file, tensor) {
  fs.writeFileSync(
      file, JSON.stringify({shape: tensor.dims, data: tensor.data}));
}

(async () => {
  const root = process.argv[2];
  for (const name of fs.readdirSync(root).sort()) {
    const data = path.join(root, name, 'test_data_set_0');
    try {
      const feeds = {};
      for (const f of fs.readdirSync(data)) {
        if (f.startsWith('in_') && f.endsWith('.npy')) {
          feeds[f.slice(3, -4)] = readNpy(path.join(data, f));
        } else if (f.startsWith('in_') && f.endsWith('.json')) {
          feeds[f.slice(3, -5)] = readJson(path.join(data, f));
        }
      }
      const session = await ort.InferenceSession.create(
          path.join(root, name, 'model.onnx'),
          {graphOptimizationLevel: 'disabled'});
      const results = await session.run(feeds);
      session.outputNames.forEach((output, k) => {
        const tensor = results[output];
        if (tensor.type === 'string') {
          writeJson(path.join(data, `out_${k}.json`), tensor);
        } else {
          writeNpy(path.join(data, `out_${k}.npy`), tensor);
        }
      });
    } catch (e) {
      fs.writeFileSync(path.join(data, 'error.txt'), String(e.message || e));
    }
  }
})();
