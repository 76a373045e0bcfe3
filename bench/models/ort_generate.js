// Greedy generation with ONNX Runtime over a decoder whose key/value cache
// is fed back each step, as onnxruntime-genai runs one (decoder_int4.py):
//   node ort_generate.js MODEL INTRA LAYERS KV_HEADS HEAD_SIZE STEPS ID...
// Inputs input_ids, attention_mask, past_key_values.L.{key,value}; outputs
// logits then present.L.{key,value}. Runs the prompt (the IDs) on an empty
// cache, then STEPS single-token steps, each on the argmax of the last
// logits; then the same from the prompt and its first id again. Prints one
// JSON line: the first prompt's milliseconds, the second generation's
// (prompt, then each step), the first's ids and its prompt's last logits.
// Needs onnxruntime-node on NODE_PATH.
const ort = require('onnxruntime-node');

function argmaxLast(logits) {
  const vocab = logits.dims[2];
  const last = logits.data.subarray(logits.data.length - vocab);
  let best = 0;
  for (let i = 1; i < vocab; ++i) {
    if (last[i] > last[best]) best = i;
  }
  return {best, last: Array.from(last)};
}

(async () => {
  const [model, intra, layers, kvHeads, headSize, steps, ...prompt] =
      process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(intra), interOpNumThreads: 1,
    executionMode: 'sequential'});
  // One generation from `prompt` on an empty cache.
  const generate = async (prompt) => {
    const cache = {};
    for (let l = 0; l < Number(layers); ++l) {
      for (const kind of ['key', 'value']) {
        cache[`past_key_values.${l}.${kind}`] = new ort.Tensor(
            'float32', new Float32Array(0),
            [1, Number(kvHeads), 0, Number(headSize)]);
      }
    }
    let ids = prompt.map(BigInt);
    let total = ids.length;
    const times = [];
    const generated = [];
    let promptLogits = null;
    for (let step = 0; step <= Number(steps); ++step) {
      const feeds = Object.assign({
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids),
                                  [1, ids.length]),
        attention_mask: new ort.Tensor(
            'int64', new BigInt64Array(total).fill(1n), [1, total]),
      }, cache);
      const t0 = process.hrtime.bigint();
      const out = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const {best, last} = argmaxLast(out.logits);
      if (step === 0) promptLogits = last;
      generated.push(best);
      for (const name of Object.keys(cache)) {
        cache[name] = out[name.replace('past_key_values', 'present')];
      }
      ids = [BigInt(best)];
      total += 1;
    }
    return {times, generated, promptLogits};
  };
  // The session's first generation (its first Runs), then a second from a
  // prompt one token longer, as a session that has served others runs it.
  const first = await generate(prompt);
  const second = await generate(prompt.concat([prompt[0]]));
  console.log(JSON.stringify({
    first_prompt_ms: first.times[0], times: second.times,
    generated: first.generated, prompt_logits: first.promptLogits}));
  await session.release();
})().catch(e => { console.error(e); process.exit(1); });
