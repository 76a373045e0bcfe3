// The server a user would otherwise write: ONNX Runtime (onnxruntime-node)
// behind a minimal HTTP handler for the same REST route weft serve answers,
// POST /v2/models/<name>/infer with the binary tensor data extension
// (one FP32 input in, every output out, as raw bytes after a JSON header).
//   node ort_server.js MODEL PORT INTRA MODE [INTER]
// MODE is sequential or parallel (ONNX Runtime's execution modes; INTER
// threads matter only in parallel). Prints "listening PORT" when ready.
// Concurrent requests run concurrently: onnxruntime-node runs each
// session.run on libuv's thread pool.
const http = require('http');
const ort = require('onnxruntime-node');

(async () => {
  const [model, port, intra, mode, inter] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(intra),
    interOpNumThreads: Number(inter || 1),
    executionMode: mode,
  });
  const inputName = session.inputNames[0];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', c => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = Buffer.concat(chunks);
        const headerLength =
            Number(req.headers['inference-header-content-length']);
        const header = JSON.parse(body.subarray(0, headerLength).toString());
        const input = header.inputs[0];
        const raw = body.subarray(headerLength);
        const data = new Float32Array(
            raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
        const feeds = {};
        feeds[inputName] = new ort.Tensor('float32', data, input.shape);
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
