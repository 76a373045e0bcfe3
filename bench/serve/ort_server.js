// The server a user would otherwise write: ONNX Runtime (onnxruntime-node)
// behind a minimal HTTP handler for the same REST route weft serve answers,
// POST /v2/models/<name>/infer with the binary tensor data extension
// (FP32, INT64 or INT32 inputs in, every output out as FP32, raw bytes after
// a JSON header).
//   node ort_server.js MODEL PORT INTRA MODE [INTER]
// MODE is sequential or parallel (ONNX Runtime's execution modes; INTER
// threads matter only in parallel). Prints "listening PORT" when ready.
// Concurrent requests run concurrently: onnxruntime-node runs each
// session.run on libuv's thread pool.
const http = require('http');
const ort = require('onnxruntime-node');

const TYPES = {
  FP32: ['float32', Float32Array],
  INT64: ['int64', BigInt64Array],
  INT32: ['int32', Int32Array],
};

(async () => {
  const [model, port, intra, mode, inter] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(intra),
    interOpNumThreads: Number(inter || 1),
    executionMode: mode,
  });
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', c => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = Buffer.concat(chunks);
        const headerLength =
            Number(req.headers['inference-header-content-length']);
        const header = JSON.parse(body.subarray(0, headerLength).toString());
        const feeds = {};
        let at = headerLength;
        for (const input of header.inputs) {
          const size = input.parameters.binary_data_size;
          const bytes = body.buffer.slice(body.byteOffset + at,
                                          body.byteOffset + at + size);
          at += size;
          const [type, Array] = TYPES[input.datatype];
          feeds[input.name] = new ort.Tensor(type, new Array(bytes), input.shape);
        }
        const results = await session.run(feeds);
        const outputs = [], parts = [];
        for (const name of session.outputNames) {
          const t = results[name];
          const bytes = Buffer.from(t.data.buffer, t.data.byteOffset,
                                    t.data.byteLength);
          outputs.push({name, datatype: 'FP32', shape: t.dims,
                        parameters: {binary_data_size: bytes.length}});
          parts.push(bytes);
        }
        const json = Buffer.from(JSON.stringify({outputs}));
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Inference-Header-Content-Length': json.length,
        });
        res.end(Buffer.concat([json, ...parts]));
      } catch (e) {
        res.writeHead(400, {'Content-Type': 'application/json'});
        res.end(JSON.stringify({error: String(e)}));
      }
    });
  });
  server.listen(Number(port), '127.0.0.1',
                () => console.log(`listening ${server.address().port}`));
})().catch(e => { console.error(e); process.exit(1); });
