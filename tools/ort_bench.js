#!/usr/bin/env node
/*
 * Times one ONNX model in ONNX Runtime (onnxruntime-node, CPU execution provider) for the ONNX
 * Runtime comparison column of the benchmarks; the models come from tools/export_onnx.py.
 *
 *   node tools/ort_bench.js MODEL.onnx [--batch 1] [--threads 2] [--min-seconds 5]
 *       [--min-runs 5] [--modules DIR] [--check INPUT.bin EXPECTED.bin]
 *
 * onnxruntime-node is resolved from --modules DIR (a node_modules folder holding
 * onnxruntime-node and onnxruntime-common), else through NODE_PATH / the usual lookup.
 * Session: intraOpNumThreads = --threads, interOpNumThreads = 1, graphOptimizationLevel 'all',
 * executionMode 'sequential'. The input is a fixed pseudo-random batch in [-1, 1); the model's
 * first input must be float32 [batch, C, H, W] with fixed C, H, W. 3 warm-up runs, then timed
 * runs until --min-seconds have passed and at least --min-runs were made.
 *
 * --check: first runs INPUT.bin (float32 LE, any batch) and compares all outputs, flattened in
 * output order, with EXPECTED.bin: per output, max |ort - ref| / max |ref| must be <= 1e-4. The
 * result goes into the JSON line, and a failure makes the exit status 1.
 *
 * Prints ONE JSON line on stdout: runtime, version, model, batch, threads, runs, median_ms,
 * mean_ms, min_ms, ms_per_image (median / batch) [, check].
 */
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE = 'usage: node tools/ort_bench.js MODEL.onnx [--batch N] [--threads N] ' +
  '[--min-seconds S] [--min-runs N] [--modules DIR] [--check INPUT.bin EXPECTED.bin] ' +
  '[--height H --width W (a dynamic input\'s size)]';
const REL_TOLERANCE = 1e-4;

function parseArgs(argv) {
  const a = { model: null, batch: 1, threads: 2, minSeconds: 5, minRuns: 5, modules: null,
              check: null, height: 0, width: 0 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--batch') a.batch = parseInt(next(), 10);
    else if (k === '--threads') a.threads = parseInt(next(), 10);
    else if (k === '--min-seconds') a.minSeconds = parseFloat(next());
    else if (k === '--min-runs') a.minRuns = parseInt(next(), 10);
    else if (k === '--modules') a.modules = next();
    else if (k === '--check') a.check = [next(), next()];
    else if (k === '--height') a.height = parseInt(next(), 10);
    else if (k === '--width') a.width = parseInt(next(), 10);
    else if (k.startsWith('--') || a.model) throw new Error(`unexpected argument ${k}\n${USAGE}`);
    else a.model = k;
  }
  if (!a.model) throw new Error(USAGE);
  if (!(a.batch >= 1 && a.threads >= 1 && a.minRuns >= 1 && a.minSeconds >= 0)) {
    throw new Error(`bad numeric option\n${USAGE}`);
  }
  return a;
}

function readFloat32(file) {
  const buf = fs.readFileSync(file);
  return new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
}

// Fixed pseudo-random values in [-1, 1) (a 32-bit LCG), so every run times the same input.
function fixedRandom(n) {
  const out = new Float32Array(n);
  let s = 12345;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2147483648 - 1;
  }
  return out;
}

// Runs INPUT.bin and compares the outputs with EXPECTED.bin (see the header).
async function check(ort, session, chw, inFile, expFile) {
  const x = readFloat32(inFile);
  const per = chw.reduce((p, d) => p * d, 1);
  if (x.length % per) throw new Error(`${inFile}: ${x.length} floats, not a multiple of ${per}`);
  const input = new ort.Tensor('float32', x, [x.length / per, ...chw]);
  const result = await session.run({ [session.inputNames[0]]: input });
  const got = session.outputNames.map((o) => result[o].data);
  const want = readFloat32(expFile);
  const total = got.reduce((n, d) => n + d.length, 0);
  if (total !== want.length) {
    throw new Error(`${expFile}: ${want.length} floats, the outputs have ${total}`);
  }
  // Per output: max |ort - ref| relative to max |ref| (FP32 rounding makes an element-wise
  // relative error meaningless for values near 0).
  const outputs = {};
  let k = 0;
  let pass = true;
  session.outputNames.forEach((o, j) => {
    let maxAbs = 0;
    let maxRef = 0;
    for (let i = 0; i < got[j].length; i++, k++) {
      const e = Math.abs(got[j][i] - want[k]);
      if (!(e <= maxAbs)) maxAbs = Number.isNaN(e) ? Infinity : e;  // a NaN fails the check
      maxRef = Math.max(maxRef, Math.abs(want[k]));
    }
    const rel = maxAbs / (maxRef || 1);
    outputs[o] = { max_abs_err: maxAbs, max_abs_ref: maxRef, rel_err: rel };
    pass = pass && rel <= REL_TOLERANCE;
  });
  return { batch: x.length / per, outputs, pass };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = require(args.modules ? path.resolve(args.modules, 'onnxruntime-node')
                                   : 'onnxruntime-node');
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const dims = session.inputMetadata[0].shape;
  const chw = dims.slice(1);
  // A dynamic height and width take --height and --width.
  if (chw.length === 3 && typeof chw[1] !== 'number' && args.height > 0) chw[1] = args.height;
  if (chw.length === 3 && typeof chw[2] !== 'number' && args.width > 0) chw[2] = args.width;
  if (chw.length !== 3 || chw.some((d) => typeof d !== 'number')) {
    throw new Error(`input: expected [batch, C, H, W] with fixed C, H, W, got [${dims}]`);
  }

  const checked = args.check ? await check(ort, session, chw, ...args.check) : null;

  const shape = [args.batch, ...chw];
  const data = fixedRandom(shape.reduce((p, d) => p * d, 1));
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, shape) };
  for (let i = 0; i < 3; i++) await session.run(feeds);  // warm-up
  const times = [];
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e9;
  while (times.length < args.minRuns || elapsed() < args.minSeconds) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  await session.release();

  const sorted = [...times].sort((p, q) => p - q);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const round = (v) => Math.round(v * 1000) / 1000;
  const out = {
    runtime: 'onnxruntime-node',
    version: ort.env.versions.node,
    model: path.basename(args.model),
    batch: args.batch,
    threads: args.threads,
    runs: times.length,
    median_ms: round(median),
    mean_ms: round(times.reduce((p, v) => p + v, 0) / times.length),
    min_ms: round(sorted[0]),
    ms_per_image: round(median / args.batch),
  };
  if (checked) out.check = checked;
  console.log(JSON.stringify(out));
  if (checked && !checked.pass) process.exitCode = 1;
}

main().catch((e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(2);
});
