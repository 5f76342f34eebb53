#!/usr/bin/env node
/*
 * Runs one ONNX model in ONNX Runtime (onnxruntime-node, CPU, one thread) on a given input and
 * writes every output's values: the independent answer the network plan's execution of an
 * imported model is checked against (tests/onnx/onnx_parity_test.cpp).
 *
 *   node tests/onnx/ort_run.js MODEL.onnx INPUT.f32 N HEIGHT WIDTH OUT_DIR --modules NODE_MODULES
 *
 * INPUT.f32: N x 3 x HEIGHT x WIDTH float32 values (little-endian, planar); the script hands them
 * to the model as [N, H, W, 3] when its input is declared so (its last dim 3, its second not).
 * Writes OUT_DIR/<k>.f32 (float32) for output k in the model's order and prints ONE JSON line:
 * {"outputs": [{"name", "dims", "file"}...]}; on an error {"error": message} and exit status 1.
 */
'use strict';

const fs = require('fs');
const path = require('path');

async function main() {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--modules');
  if (argv.length !== 8 || at !== 6) {
    console.error('usage: node ort_run.js MODEL.onnx INPUT.f32 N H W OUT_DIR --modules DIR');
    process.exit(2);
  }
  const [model, input, n, h, w, outDir] = [argv[0], argv[1], Number(argv[2]), Number(argv[3]),
    Number(argv[4]), argv[5]];
  const ort = require(path.resolve(argv[7], 'onnxruntime-node'));
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const declared = meta && meta.shape ? meta.shape : [];
  const channelsLast = declared.length === 4 && declared[3] === 3 && declared[1] !== 3;
  const bytes = fs.readFileSync(input);
  const planar = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  if (planar.length !== n * 3 * h * w) {
    throw new Error(`input has ${planar.length} values, not ${n}x3x${h}x${w}`);
  }
  let x = planar;
  if (channelsLast) {
    x = new Float32Array(planar.length);
    const plane = h * w;
    for (let i = 0; i < n; ++i) {
      for (let c = 0; c < 3; ++c) {
        for (let p = 0; p < plane; ++p) x[(i * plane + p) * 3 + c] = planar[(i * 3 + c) * plane + p];
      }
    }
  }
  const dims = channelsLast ? [n, h, w, 3] : [n, 3, h, w];
  const results = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', x, dims) });
  const outputs = session.outputNames.map((name, k) => {
    const file = path.join(outDir, `${k}.f32`);
    const data = results[name].data;
    fs.writeFileSync(file, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    return { name, dims: results[name].dims, file };
  });
  console.log(JSON.stringify({ outputs }));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.message ? e.message : e) }));
  process.exit(1);
});
