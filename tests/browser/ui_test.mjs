// Browser tests of the web UI: Debian's chromium, driven headless by playwright-core, against the
// real `mogserve serve`. Every check compares what the page shows with what the API answers for
// the same input, asked directly by this script.
//
//   node tests/browser/ui_test.mjs --mogserve BUILD/mogserve --model-dir models/ssd_mobilenetv1 \
//        --data tests/data --out BUILD/tests/browser [--chromium /usr/bin/chromium]
//   node tests/browser/ui_test.mjs --url http://127.0.0.1:7860 --data tests/data   (a running server)
//
// Screenshots go to OUT/screenshots/. Exit status 0 when every check passed.

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { withExifOrientation } from './jpeg_exif.mjs';
import { startServer } from './server.mjs';

const { values: opt } = parseArgs({
  options: {
    mogserve: { type: 'string' },
    'model-dir': { type: 'string' },
    data: { type: 'string' },
    out: { type: 'string', default: 'build/tests/browser' },
    chromium: { type: 'string', default: process.env.CHROMIUM || '/usr/bin/chromium' },
    verbose: { type: 'boolean', default: false },
    // Test a server that is already running instead of starting one (while editing the UI).
    url: { type: 'string' },
    'api-key': { type: 'string' },  // the --url server's key, if it has one
    clip: { type: 'string' },  // the video test clip (tests/video/make_clip.sh): the Streams page
  },
});
for (const required of opt.url ? ['data'] : ['mogserve', 'model-dir', 'data']) {
  if (!opt[required]) {
    console.error(`usage: ui_test.mjs --mogserve BIN --model-dir DIR --data DIR [--out DIR]`);
    process.exit(2);
  }
}

const PHOTOS = path.join(opt.data, 'photos');
const GROUND_TRUTH = JSON.parse(fs.readFileSync(path.join(opt.data, 'ground_truth.json')));
const SHOTS = path.join(opt.out, 'screenshots');
const REQUEST_THRESHOLD = 0.2;  // what the UI sends (web/js/faces.js)
const DEFAULT_THRESHOLD = 0.5;  // the SSD's default
const PX_TOLERANCE = 1.0;  // drawn box edges vs. the API's box, in CSS pixels

const SKIP = 77;  // ctest's SKIP_RETURN_CODE: a missing dependency is reported, not a failure

// The server this script starts requires a key: the page must ask for it and send it.
const API_KEY = opt.url ? opt['api-key'] || '' : `browser-test-${process.pid}`;
const AUTH = API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {};

const started = Date.now();
const failures = [];
let currentStep = '';
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function step(name, fn) {
  currentStep = name;
  const t = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - t} ms)`);
  } catch (e) {
    failures.push(`${name}: ${e.message}`);
    console.log(`FAIL ${name}: ${e.stack || e.message}`);
  }
}

// The API's answer for one photo, asked directly (multipart, like the page).
async function apiDetect(url, bytes, name, threshold = REQUEST_THRESHOLD) {
  const form = new FormData();
  form.append('image', new Blob([bytes]), name);
  const r = await fetch(`${url}/v1/detect?score_threshold=${threshold}`,
                        { method: 'POST', body: form, headers: AUTH });
  return { status: r.status, body: await r.json() };
}

// What the single view draws: the image's rectangle and each box element's rectangle.
function readOverlay(page) {
  return page.evaluate(() => {
    const img = document.getElementById('photo');
    const r = img.getBoundingClientRect();
    return {
      img: { x: r.left, y: r.top, w: r.width, h: r.height, nw: img.naturalWidth,
             nh: img.naturalHeight },
      count: document.getElementById('face-count').textContent,
      boxes: [...document.querySelectorAll('#overlay .face-box')].map((b) => {
        const q = b.getBoundingClientRect();
        return { box: b.dataset.box.split(',').map(Number), score: Number(b.dataset.score),
                 x: q.left, y: q.top, w: q.width, h: q.height };
      }),
    };
  });
}

// Checks that exactly the API's faces scoring >= threshold are drawn, each where the API's box
// falls on the displayed image.
function checkBoxes(drawn, api, threshold, label) {
  const expected = api.faces.filter((f) => f.score >= threshold);
  check(Number(drawn.count) === expected.length,
        `${label}: face count shows ${drawn.count}, the API has ${expected.length} at ${threshold}`);
  check(drawn.boxes.length === expected.length,
        `${label}: ${drawn.boxes.length} boxes drawn, expected ${expected.length}`);
  check(drawn.img.nw === api.width && drawn.img.nh === api.height,
        `${label}: the browser shows ${drawn.img.nw}x${drawn.img.nh}, the API read ` +
        `${api.width}x${api.height}`);
  const sx = drawn.img.w / api.width;
  const sy = drawn.img.h / api.height;
  for (const face of expected) {
    const [x1, y1, x2, y2] = face.box;
    const want = { x: drawn.img.x + x1 * sx, y: drawn.img.y + y1 * sy, w: (x2 - x1) * sx,
                   h: (y2 - y1) * sy };
    const got = drawn.boxes.find((b) => b.box.every((v, i) => Math.abs(v - face.box[i]) < 0.01));
    check(got, `${label}: no box drawn for the API's face ${JSON.stringify(face)}`);
    for (const k of ['x', 'y', 'w', 'h']) {
      check(Math.abs(got[k] - want[k]) <= PX_TOLERANCE,
            `${label}: box ${face.box} ${k} is ${got[k].toFixed(2)} px on screen, expected ` +
            `${want[k].toFixed(2)} (image at ${drawn.img.w.toFixed(1)}x${drawn.img.h.toFixed(1)})`);
    }
  }
}

async function showPhoto(page, name, bytes, mimeType) {
  await page.goto(`${page.baseUrl}/#single`);
  await page.waitForSelector('body[data-ready="true"]');
  const before = await page.evaluate(() => document.getElementById('photo').src);
  await page.setInputFiles('#single-file', { name, mimeType, buffer: bytes });
  await page.waitForFunction((old) => {
    const count = document.getElementById('face-count').textContent;
    const img = document.getElementById('photo');
    return img.src !== old && img.complete && /^\d+$/.test(count);
  }, before);
}

async function main() {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    console.log('SKIP: playwright-core is not installed (run scripts/setup.sh)');
    process.exit(SKIP);
  }
  if (!fs.existsSync(opt.chromium)) {
    console.log(`SKIP: no chromium at ${opt.chromium} (run scripts/setup.sh)`);
    process.exit(SKIP);
  }
  fs.mkdirSync(SHOTS, { recursive: true });
  // The server's warm-up and chromium's start-up overlap: both take seconds on a busy machine.
  const [server, browser] = await Promise.all([
    opt.url ? { url: opt.url, stop: async () => {} } : startServer({
      binary: opt.mogserve,
      // Two planned batch sizes keep the warm-up short; batching still happens (up to 2).
      args: ['--model-dir', opt['model-dir'], '--plan-batch-sizes', '1,2', '--access-log', 'off',
             '--api-key', API_KEY],
      log: opt.verbose ? (t) => process.stdout.write(t) : () => {},
    }),
    chromium.launch({
      executablePath: opt.chromium,
      // --no-sandbox: test machines run as root, where chromium's sandbox cannot start.
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    }),
  ]);
  console.log(`mogserve ready at ${server.url}, chromium ${browser.version()} up, after ` +
              `${elapsed()}`);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 },
                                             acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  page.baseUrl = server.url;

  // Every console error and uncaught exception fails the run, except the browser's own
  // "Failed to load resource" line for a 4xx that a step provokes on purpose (a non-image).
  const consoleErrors = [];
  let expectedHttpErrors = false;
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    const text = m.text();
    if (expectedHttpErrors && /Failed to load resource: .* status of 4\d\d/.test(text)) return;
    if (m.type() === 'error') consoleErrors.push(`[${currentStep}] console: ${text}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`[${currentStep}] exception: ${e.message}`));

  const photoNames = fs.readdirSync(PHOTOS).filter((n) => /\.(jpe?g|png|webp)$/i.test(n)).sort();
  const read = (n) => fs.readFileSync(path.join(PHOTOS, n));

  try {
    await step('page and assets are served with the right headers', async () => {
      const index = await fetch(`${server.url}/`);
      check(index.ok, `GET / answered ${index.status}`);
      check(index.headers.get('content-type').startsWith('text/html'), 'index Content-Type');
      check(index.headers.get('cache-control') === 'no-cache', 'index Cache-Control');
      check(index.headers.get('content-security-policy'), 'index has no CSP');
      const etag = index.headers.get('etag');
      const again = await fetch(`${server.url}/`, { headers: { 'If-None-Match': etag } });
      check(again.status === 304, `a matching If-None-Match answered ${again.status}, not 304`);
      for (const [p, type] of [['/ui/js/main.js', 'text/javascript'], ['/ui/app.css', 'text/css'],
                               ['/ui/vendor/uPlot.iife.min.js', 'text/javascript']]) {
        const r = await fetch(`${server.url}${p}`);
        check(r.ok && r.headers.get('content-type').startsWith(type), `${p}: ${r.status}`);
      }
      check((await fetch(`${server.url}/ui/nope.js`)).status === 404, 'unknown asset is not 404');
    });

    if (API_KEY) {
      await step('API key: asked for, kept for the tab, sent as Bearer', async () => {
        expectedHttpErrors = true;  // the first /v1/models answers 401, as it should
        await page.goto(`${server.url}/#single`);
        await page.waitForSelector('#banner:not([hidden])');
        const banner = await page.textContent('#banner');
        check(/API key/.test(banner), `banner "${banner}"`);
        await page.click('#api-key-button');
        await page.fill('#api-key-input', API_KEY);
        await page.press('#api-key-input', 'Enter');
        await page.waitForSelector('body[data-ready="true"]');
        check(await page.isHidden('#banner'), 'the banner stays after the key was given');
        const kept = await page.evaluate(() => sessionStorage.getItem('mogserve.apiKey'));
        check(kept === API_KEY, 'the key is not in sessionStorage');
        expectedHttpErrors = false;
      });
    }

    await step('single photo: boxes drawn where the API says (sample1.jpg, two sizes)', async () => {
      const bytes = read('sample1.jpg');
      const api = (await apiDetect(server.url, bytes, 'sample1.jpg')).body;
      await showPhoto(page, 'sample1.jpg', bytes, 'image/jpeg');
      checkBoxes(await readOverlay(page), api, DEFAULT_THRESHOLD, 'sample1 at 1280 px');
      const timing = await page.textContent('#timings td[data-key="inference_ms"]');
      check(/ms$/.test(timing), `inference timing shows "${timing}"`);
      await page.screenshot({ path: path.join(SHOTS, 'single.png') });
      // A narrow screen: the image shrinks, the boxes must follow.
      await page.setViewportSize({ width: 420, height: 860 });
      await page.waitForTimeout(100);
      checkBoxes(await readOverlay(page), api, DEFAULT_THRESHOLD, 'sample1 at 420 px');
      await page.screenshot({ path: path.join(SHOTS, 'single-narrow.png'), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    await step('single photo: EXIF orientation 6 (rotated grace_hopper.jpg)', async () => {
      const bytes = withExifOrientation(read('grace_hopper.jpg'), 6);
      const api = (await apiDetect(server.url, bytes, 'rotated.jpg')).body;
      check(api.width > api.height, `the API did not rotate: ${api.width}x${api.height}`);
      await showPhoto(page, 'rotated.jpg', bytes, 'image/jpeg');
      checkBoxes(await readOverlay(page), api, DEFAULT_THRESHOLD, 'rotated');
      await page.screenshot({ path: path.join(SHOTS, 'single-exif-rotated.png') });
    });

    await step('slider re-filters without uploading again (grace_hopper.jpg)', async () => {
      const bytes = read('grace_hopper.jpg');
      const api = (await apiDetect(server.url, bytes, 'grace_hopper.jpg')).body;
      await showPhoto(page, 'grace_hopper.jpg', bytes, 'image/jpeg');
      let uploads = 0;
      page.on('request', (r) => { if (r.url().includes('/v1/detect')) uploads++; });
      const counts = new Set();
      for (const t of [0.3, 0.99, 1.0, 0.2, 0.5]) {
        await page.fill('#threshold', String(t));
        const drawn = await readOverlay(page);
        checkBoxes(drawn, api, t, `slider at ${t}`);
        counts.add(drawn.boxes.length);
      }
      check(counts.size >= 2, `the face count never changed across thresholds: ${[...counts]}`);
      // The keyboard moves it too.
      await page.focus('#threshold');
      await page.keyboard.press('Home');
      checkBoxes(await readOverlay(page), api, REQUEST_THRESHOLD, 'slider at Home');
      check(uploads === 0, `moving the slider sent ${uploads} requests`);
      await page.fill('#threshold', String(DEFAULT_THRESHOLD));
    });

    await step('single photo: downloads (PNG and JSON)', async () => {
      const [png] = await Promise.all([page.waitForEvent('download'), page.click('#download-png')]);
      const pngBytes = fs.readFileSync(await png.path());
      check(pngBytes.subarray(1, 4).toString() === 'PNG', 'the annotated download is not a PNG');
      const [json] = await Promise.all([page.waitForEvent('download'),
                                        page.click('#download-json')]);
      const body = JSON.parse(fs.readFileSync(await json.path(), 'utf8'));
      check(body.faces.length === 1 && body.width === 512, `JSON download: ${JSON.stringify(body)}`);
    });

    await step('non-image: the server\'s error is shown and the page keeps working', async () => {
      expectedHttpErrors = true;
      const junk = Buffer.from('these are not the pixels you are looking for\n');
      const api = await apiDetect(server.url, junk, 'notes.txt');
      await page.setInputFiles('#single-file', { name: 'notes.txt', mimeType: 'text/plain',
                                                 buffer: junk });
      await page.waitForSelector('#single-error:not([hidden])');
      const shown = await page.textContent('#single-error');
      check(shown.includes(api.body.error.message),
            `shown "${shown}", the server said "${api.body.error.message}"`);
      await page.screenshot({ path: path.join(SHOTS, 'single-error.png') });
      expectedHttpErrors = false;
      const bytes = read('sample2.jpg');
      const good = (await apiDetect(server.url, bytes, 'sample2.jpg')).body;
      await showPhoto(page, 'sample2.jpg', bytes, 'image/jpeg');
      check(await page.isHidden('#single-error'), 'the error is still shown after a good photo');
      checkBoxes(await readOverlay(page), good, DEFAULT_THRESHOLD, 'sample2 after an error');
    });

    await step(`many photos: ${photoNames.length} at once, progress to 100 %, counts`, async () => {
      // Keyboard: the tab link works with Enter.
      await page.focus('a[data-view="batch"]');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#view-batch:not([hidden])');
      await page.setInputFiles('#batch-files', photoNames.map((n) => path.join(PHOTOS, n)));
      await page.waitForFunction((n) => {
        const p = document.getElementById('batch-progress');
        return p.max === n && p.value === n;
      }, photoNames.length, { timeout: 45000 });
      const tiles = await page.$$eval('#gallery li', (lis) => lis.map((li) => ({
        name: li.dataset.name, status: li.dataset.status, count: Number(li.dataset.count) })));
      check(tiles.length === photoNames.length, `${tiles.length} tiles`);
      let total = 0;
      for (const tile of tiles) {
        const want = GROUND_TRUTH[tile.name].length;
        check(tile.status === 'done', `${tile.name}: ${tile.status}`);
        check(tile.count === want, `${tile.name}: gallery says ${tile.count}, ground truth ${want}`);
        total += tile.count;
      }
      const expectedTotal = photoNames.reduce((n, p) => n + GROUND_TRUTH[p].length, 0);
      check(total === expectedTotal, `${total} faces in the gallery, ${expectedTotal} expected`);
      const status = await page.textContent('#batch-status');
      check(status.includes(`${photoNames.length} / ${photoNames.length}`) &&
            /images\/s/.test(status), `status line "${status}"`);
      await page.screenshot({ path: path.join(SHOTS, 'batch.png'), fullPage: true });

      const [jsonl] = await Promise.all([page.waitForEvent('download'),
                                         page.click('#export-jsonl')]);
      const lines = fs.readFileSync(await jsonl.path(), 'utf8').trim().split('\n').map(JSON.parse);
      check(lines.length === photoNames.length, `${lines.length} JSON lines`);
      check(lines.reduce((n, l) => n + l.faces.length, 0) === expectedTotal, 'JSONL face total');
      const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
      const rows = fs.readFileSync(await csv.path(), 'utf8').trim().split('\r\n');
      check(rows[0].startsWith('file,status,width,height,face'), `CSV header ${rows[0]}`);

      // Opening a tile shows it in the single view, without another upload.
      await page.click('#gallery li[data-name="sample5.jpg"] button');
      await page.waitForSelector('#view-single:not([hidden])');
      await page.waitForFunction(() => document.getElementById('face-count').textContent === '5');
    });

    await step('many photos: a failed file shows the server\'s message', async () => {
      expectedHttpErrors = true;
      await page.goto(`${server.url}/#batch`);
      await page.waitForSelector('body[data-ready="true"]');
      await page.setInputFiles('#batch-files', [
        { name: 'broken.jpg', mimeType: 'image/jpeg', buffer: Buffer.from('not a jpeg') },
        { name: 'camera.png', mimeType: 'image/png', buffer: read('camera.png') },
      ]);
      await page.waitForFunction(() => document.getElementById('batch-progress').value === 2);
      const failed = await page.textContent('#gallery li[data-name="broken.jpg"] .message');
      check(/image/i.test(failed), `failure message "${failed}"`);
      const ok = await page.getAttribute('#gallery li[data-name="camera.png"]', 'data-count');
      check(ok === '1', `camera.png count ${ok}`);
      expectedHttpErrors = false;
    });

    await step('dashboard: numbers and charts move while a load runs', async () => {
      await page.goto(`${server.url}/#dashboard`);
      await page.waitForSelector('#stat-done[data-done]');
      const done0 = Number(await page.getAttribute('#stat-done', 'data-done'));
      // Background load from this script: 4 clients for ~3 s.
      const bytes = read('astronaut.png');
      const stopAt = Date.now() + 3000;
      const client = async () => {
        while (Date.now() < stopAt) await apiDetect(server.url, bytes, 'astronaut.png', 0.5);
      };
      const load = Promise.all([client(), client(), client(), client()]);
      await page.waitForFunction((d0) => {
        const s = document.getElementById('stat-done');
        return Number(s.dataset.done) > d0 &&
               Number(document.getElementById('stat-ips').dataset.value) > 0;
      }, done0, { timeout: 20000 });
      await load;
      await page.waitForTimeout(1200);  // one more poll, so the charts hold the whole load
      const charts = await page.$$eval('.uplot', (els) => els.length);
      check(charts === 6, `${charts} charts drawn, expected 6`);
      const model = await page.textContent('#model-info');
      check(model.includes('ssd-mobilenetv1'), `model info "${model.slice(0, 100)}"`);
      const plan = await page.textContent('#buffer-plan');
      check(plan.includes('buffer plan'), `buffer plan "${plan.slice(0, 80)}"`);
      await page.screenshot({ path: path.join(SHOTS, 'dashboard.png'), fullPage: true });
    });

    if (opt.clip && fs.existsSync(opt.clip)) {
      await step('streams: add one, live stats and its latest frame, remove it', async () => {
        await page.goto(`${server.url}/#streams`);
        await page.fill('#stream-id', 'cam');
        await page.fill('#stream-url', opt.clip);
        await page.fill('#stream-fps', '5');
        await page.click('#stream-add');
        // The clip plays like a camera for 10 s: running, detecting, as the API says.
        await page.waitForFunction(() => {
          const row = document.querySelector('#streams-body tr[data-stream="cam"]');
          return row && row.querySelector('[data-key="state"]').textContent === 'running' &&
                 Number(row.querySelector('[data-key="detected"]').textContent) > 0;
        }, null, { timeout: 30000 });
        const api = await (await fetch(`${server.url}/v1/streams/cam`, { headers: AUTH })).json();
        check(api.state === 'running' && api.frames.detected > 0, `API: ${JSON.stringify(api)}`);
        const url = await page.textContent('#streams-body tr[data-stream="cam"] [data-key="url"]');
        check(url === api.url, `URL shown "${url}", API "${api.url}"`);
        // The tile shows the latest detected frame (640 px wide) and its faces (SSE).
        await page.waitForFunction(() => {
          const img = document.querySelector('.stream-tile[data-stream="cam"] img');
          return img && img.complete && img.naturalWidth === 640;
        }, null, { timeout: 20000 });
        await page.waitForFunction(() => /· [45] faces$/.test(
          document.querySelector('.stream-tile[data-stream="cam"] span').textContent));
        await page.screenshot({ path: path.join(SHOTS, 'streams.png'), fullPage: true });
        await page.click('button[aria-label="Remove cam"]');
        await page.waitForSelector('#streams-body tr[data-stream="cam"]', { state: 'detached' });
        await page.waitForSelector('.stream-tile[data-stream="cam"]', { state: 'detached' });
        const gone = await fetch(`${server.url}/v1/streams/cam`, { headers: AUTH });
        check(gone.status === 404, `after Remove the API answers ${gone.status}`);
      });
    }

    await step('no console errors', async () => {
      check(consoleErrors.length === 0, consoleErrors.join('\n'));
    });
  } finally {
    await browser.close();
    await server.stop();
  }
  console.log(`${failures.length ? 'FAILED' : 'passed'} in ${elapsed()}; screenshots in ${SHOTS}`);
  if (failures.length) {
    console.log(failures.map((f) => `  - ${f}`).join('\n'));
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
