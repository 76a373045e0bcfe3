// Shared by ort_bench.js and ort_profile.js.
const fs = require('fs');

// A little-endian .npy file (version 1 or 2) as an ort.Tensor.
function readNpy(ort, path) {
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
  if (descr === '|b1') {  // bool travels as bytes
    return new ort.Tensor('bool', Array.from(new Uint8Array(data), v => v !== 0),
                          shape);
  }
  const [type, Typed] = types[descr];
  return new ort.Tensor(type, new Typed(data), shape);
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]
                      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

// NAME=FILE.npy arguments as a feeds object for session.run.
function readFeeds(ort, args) {
  const feeds = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    feeds[arg.slice(0, eq)] = readNpy(ort, arg.slice(eq + 1));
  }
  return feeds;
}

module.exports = {readNpy, readFeeds, median};
