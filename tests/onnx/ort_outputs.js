#!/usr/bin/env node
/*
 * Runs one ONNX model in ONNX Runtime (onnxruntime-node, CPU) on a batch-1 input of the given
 * height and width and prints the shapes of its outputs: the independent answer that
 * `mogserve model inspect`'s shape inference is checked against (tests/onnx).
 *
 *   node tests/onnx/ort_outputs.js MODEL.onnx HEIGHT WIDTH --modules NODE_MODULES_DIR
 *
 * The input's layout follows its declared shape: [N, H, W, 3] when its last dim is 3 and its
 * second is not, else [N, 3, H, W]. The input is a fixed ramp in [0, 1). Prints ONE JSON line:
 * {"outputs": [{"name", "dims"}...]} in the model's output order; on an error (ONNX Runtime
 * refusing the model or the size), {"error": message} and exit status 1.
 */
'use strict';

const path = require('path');

async function main() {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--modules');
  if (argv.length !== 5 || at !== 3) {
    console.error('usage: node ort_outputs.js MODEL.onnx HEIGHT WIDTH --modules DIR');
    process.exit(2);
  }
  const [model, h, w] = [argv[0], Number(argv[1]), Number(argv[2])];
  const ort = require(path.resolve(argv[4], 'onnxruntime-node'));
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const declared = meta && meta.shape ? meta.shape : [];
  const channelsLast = declared.length === 4 && declared[3] === 3 && declared[1] !== 3;
  const dims = channelsLast ? [1, h, w, 3] : [1, 3, h, w];
  const x = new Float32Array(h * w * 3);
  for (let i = 0; i < x.length; ++i) x[i] = (i % 251) / 251;
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x, dims) };
  const results = await session.run(feeds);
  const outputs = session.outputNames.map((name) => ({ name, dims: results[name].dims }));
  console.log(JSON.stringify({ outputs }));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.message ? e.message : e) }));
  process.exit(1);
});
