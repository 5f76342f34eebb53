// Many photos: files or a whole folder, uploaded one photo per request with bounded concurrency
// (the server batches requests from all clients itself, so one image per request costs nothing
// in throughput and gives per-file progress and per-file errors). Counts re-filter in the browser
// like the single view's slider: every photo is sent with the same low threshold.

import { detect } from './api.js';
import { csvField, saveText } from './download.js';
import { REQUEST_THRESHOLD, plural, visibleFaces } from './faces.js';

const $ = (id) => document.getElementById(id);
const IMAGE_NAME = /\.(jpe?g|png|webp)$/i;

export class BatchView {
  constructor({ openInSingle }) {
    this.openInSingle = openInSingle;
    this.items = [];
    this.controller = null;
    this.wireInputs();
  }

  setDefaultThreshold(value) {
    $('batch-threshold').value = String(Math.max(REQUEST_THRESHOLD, value));
    this.renderCounts();
  }

  threshold() {
    const value = Number($('batch-threshold').value);
    return Number.isFinite(value) ? value : 0.5;
  }

  wireInputs() {
    const files = $('batch-files');
    files.addEventListener('change', () => {
      this.run([...files.files]);
      files.value = '';
    });
    const folder = $('batch-folder');
    folder.addEventListener('change', () => {
      // A folder holds more than photos; keep what the server can read, by name or by type.
      const picked = [...folder.files].filter((f) => IMAGE_NAME.test(f.name) ||
                                                     /^image\/(jpeg|png|webp)$/.test(f.type));
      this.run(picked);
      folder.value = '';
    });
    const drop = $('batch-drop');
    drop.addEventListener('dragover', (e) => {
      e.preventDefault();
      drop.classList.add('dragover');
    });
    drop.addEventListener('dragleave', () => drop.classList.remove('dragover'));
    drop.addEventListener('drop', (e) => {
      e.preventDefault();
      drop.classList.remove('dragover');
      this.run([...e.dataTransfer.files]);
    });
    $('batch-threshold').addEventListener('input', () => this.renderCounts());
    $('batch-cancel').addEventListener('click', () => this.cancel());
    $('export-jsonl').addEventListener('click', () => this.exportJsonLines());
    $('export-csv').addEventListener('click', () => this.exportCsv());
  }

  cancel() {
    if (this.controller) this.controller.abort();
  }

  // Starts a new run over `files`, replacing (and cancelling) the previous one.
  async run(files) {
    if (!files.length) return;
    this.cancel();
    for (const item of this.items) if (item.url) URL.revokeObjectURL(item.url);
    const controller = new AbortController();
    this.controller = controller;
    this.items = files.map((file, index) => ({
      file,
      index,
      name: file.webkitRelativePath || file.name,
      status: 'pending',
      result: null,
      error: null,
      url: null,
    }));
    $('gallery').replaceChildren(...this.items.map((item) => this.tile(item)));
    $('batch-cancel').disabled = false;
    this.started = performance.now();
    this.finished = 0;
    this.cancelled = false;
    this.renderProgress();

    const concurrency = Number($('batch-concurrency').value) || 4;
    let next = 0;
    const worker = async () => {
      while (next < this.items.length && !controller.signal.aborted) {
        await this.upload(this.items[next++], controller.signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, this.items.length) }, worker));
    if (this.controller === controller) {
      this.cancelled = controller.signal.aborted;
      for (const item of this.items) {
        if (item.status === 'pending' || item.status === 'running' || item.status === 'cancelled') {
          item.li.dataset.status = 'cancelled';
          item.li.querySelector('.count').textContent = 'not sent (cancelled)';
        }
      }
      $('batch-cancel').disabled = true;
      this.controller = null;
      this.renderProgress();
    }
  }

  async upload(item, signal) {
    item.status = 'running';
    try {
      item.result = await detect(item.file, { scoreThreshold: REQUEST_THRESHOLD, signal });
      item.status = 'done';
    } catch (e) {
      if (e.name === 'AbortError') {
        item.status = 'cancelled';
        item.error = { code: 'cancelled', message: 'cancelled' };
      } else {
        item.status = 'failed';
        item.error = { code: e.code, message: e.message };
      }
    }
    if (signal.aborted && item.status !== 'done') return;
    this.finished++;
    this.renderTile(item);
    this.renderProgress();
  }

  tile(item) {
    const li = document.createElement('li');
    li.dataset.name = item.name;
    li.dataset.status = item.status;
    const button = document.createElement('button');
    button.type = 'button';
    button.disabled = true;
    button.addEventListener('click', () => {
      if (item.status === 'done') this.openInSingle(item.file, item.result);
    });
    const img = document.createElement('img');
    img.alt = '';
    img.loading = 'lazy';
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = item.name;
    name.title = item.name;
    const count = document.createElement('span');
    count.className = 'count';
    count.textContent = 'waiting…';
    button.append(img, name, count);
    li.append(button);
    item.li = li;
    return li;
  }

  renderTile(item) {
    const { li } = item;
    li.dataset.status = item.status;
    const button = li.querySelector('button');
    const count = li.querySelector('.count');
    if (item.status === 'done') {
      // The thumbnail only once the server has read the file as a photo: a non-image would show
      // as a broken picture.
      item.url = URL.createObjectURL(item.file);
      li.querySelector('img').src = item.url;
      button.disabled = false;
      this.renderCount(item);
    } else {
      li.classList.add('failed');
      count.textContent = item.status === 'cancelled' ? 'cancelled' : 'failed';
      const message = document.createElement('span');
      message.className = 'message';
      message.textContent = item.error.message;
      button.append(message);
    }
  }

  renderCount(item) {
    const n = visibleFaces(item.result, this.threshold()).length;
    item.li.dataset.count = n;
    item.li.querySelector('.count').textContent = plural(n, 'face');
    item.li.querySelector('button').setAttribute('aria-label', `${item.name}: ${plural(n, 'face')}`);
  }

  renderCounts() {
    for (const item of this.items) if (item.status === 'done') this.renderCount(item);
    this.renderSummary();
  }

  renderProgress() {
    const total = this.items.length;
    const progress = $('batch-progress');
    progress.max = Math.max(1, total);
    progress.value = this.finished;
    const seconds = (performance.now() - this.started) / 1000;
    const rate = seconds > 0 ? this.finished / seconds : 0;
    let text = `${this.finished} / ${total}`;
    if (rate > 0) text += ` · ${rate.toFixed(1)} images/s`;
    if (this.finished < total && rate > 0) {
      text += ` · ETA ${formatSeconds((total - this.finished) / rate)}`;
    } else if (this.finished === total) {
      text += ` · done in ${formatSeconds(seconds)}`;
    }
    if (this.cancelled) text += ' · cancelled';
    $('batch-status').textContent = text;
    this.renderSummary();
  }

  renderSummary() {
    const done = this.items.filter((i) => i.status === 'done');
    const failed = this.items.filter((i) => i.status === 'failed').length;
    const faces = done.reduce((n, i) => n + visibleFaces(i.result, this.threshold()).length, 0);
    $('batch-summary').textContent = this.items.length
      ? `${plural(done.length, 'photo')} · ${plural(faces, 'face')} · ${failed} failed`
      : '';
    const any = done.length + failed > 0;
    $('export-jsonl').disabled = !any;
    $('export-csv').disabled = !any;
  }

  finishedItems() {
    return this.items.filter((i) => i.status === 'done' || i.status === 'failed');
  }

  exportJsonLines() {
    const threshold = this.threshold();
    const lines = this.finishedItems().map((item) => JSON.stringify(item.status === 'done'
      ? {
          name: item.name,
          status: 'ok',
          width: item.result.width,
          height: item.result.height,
          score_threshold: threshold,
          faces: visibleFaces(item.result, threshold),
          timing: item.result.timing,
        }
      : { name: item.name, status: 'error', error: item.error }));
    saveText(lines.map((l) => `${l}\n`).join(''), 'mogserve_results.jsonl',
             'application/x-ndjson');
  }

  // One row per face; a photo without faces, or one that failed, still gets one row.
  exportCsv() {
    const threshold = this.threshold();
    const rows = [['file', 'status', 'width', 'height', 'face', 'x1', 'y1', 'x2', 'y2', 'score',
                   'error']];
    for (const item of this.finishedItems()) {
      if (item.status !== 'done') {
        rows.push([item.name, 'error', '', '', '', '', '', '', '', '', item.error.message]);
        continue;
      }
      const { width, height } = item.result;
      const faces = visibleFaces(item.result, threshold);
      if (!faces.length) rows.push([item.name, 'ok', width, height, '', '', '', '', '', '', '']);
      faces.forEach((f, i) => rows.push([item.name, 'ok', width, height, i, ...f.box, f.score,
                                         '']));
    }
    saveText(rows.map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n',
             'mogserve_results.csv', 'text/csv');
  }
}

function formatSeconds(s) {
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - 60 * m)} s`;
}
