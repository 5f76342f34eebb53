// Single photo: pick, drop or paste a photo; it is sent once with a low threshold and the slider
// filters the boxes in the browser. Boxes are HTML elements placed in percentages of the shown
// image, so they stay in place at any display size; the API's boxes are in the pixels of the
// upright picture, which is how the browser shows it (image-orientation: from-image).

import { detect } from './api.js';
import { baseName, saveBlob, saveText } from './download.js';
import { REQUEST_THRESHOLD, annotatedCanvas, formatMs, visibleFaces } from './faces.js';

const $ = (id) => document.getElementById(id);

export class SingleView {
  constructor() {
    this.file = null;
    this.result = null;
    this.objectUrl = null;
    this.sequence = 0;  // answers to older requests are dropped: only the latest photo counts
    this.slider = $('threshold');
    $('request-threshold').textContent = REQUEST_THRESHOLD.toFixed(2);
    this.slider.min = String(REQUEST_THRESHOLD);
    this.wireInputs();
  }

  setDefaultThreshold(value) {
    this.slider.value = String(Math.max(REQUEST_THRESHOLD, value));
    this.render();
  }

  threshold() {
    return Number(this.slider.value);
  }

  wireInputs() {
    const input = $('single-file');
    input.addEventListener('change', () => {
      if (input.files.length) this.analyse(input.files[0]);
      input.value = '';  // choosing the same file again should run again
    });
    const drop = $('single-drop');
    drop.addEventListener('dragover', (e) => {
      e.preventDefault();
      drop.classList.add('dragover');
    });
    drop.addEventListener('dragleave', () => drop.classList.remove('dragover'));
    drop.addEventListener('drop', (e) => {
      e.preventDefault();
      drop.classList.remove('dragover');
      const file = e.dataTransfer.files[0];
      if (file) this.analyse(file);
    });
    this.slider.addEventListener('input', () => this.render());
    $('download-png').addEventListener('click', () => this.downloadPng());
    $('download-json').addEventListener('click', () => this.downloadJson());
  }

  // Called by main.js for a paste while this view is shown.
  onPaste(event) {
    const item = [...event.clipboardData.items].find((i) => i.kind === 'file');
    if (!item) return;
    event.preventDefault();
    const file = item.getAsFile();
    const ext = (file.type.split('/')[1] || 'png').replace('jpeg', 'jpg');
    this.analyse(new File([file], file.name || `pasted.${ext}`, { type: file.type }));
  }

  async analyse(file) {
    const sequence = ++this.sequence;
    this.result = null;  // the slider must not draw the previous photo's boxes on this one
    this.showError('');
    $('face-count').textContent = '…';
    $('photo-caption').textContent = `Detecting faces in ${file.name}…`;
    // Show the photo at once when it looks like one; anything else waits for the server's verdict
    // (the browser would only show a broken image).
    if (file.type.startsWith('image/')) this.setPhoto(file, null);
    const started = performance.now();
    try {
      const result = await detect(file, { scoreThreshold: REQUEST_THRESHOLD });
      if (sequence !== this.sequence) return;
      result.timing = { ...result.timing, round_trip_ms: performance.now() - started };
      await this.show(file, result);
    } catch (e) {
      if (sequence !== this.sequence) return;
      this.clear();
      this.showError(`${file.name}: ${e.message}`);
    }
  }

  // Shows a photo and its result (also used by the gallery, with a result it already has).
  async show(file, result) {
    this.result = null;
    await this.setPhoto(file, result);
    this.showError('');
    this.result = result;
    this.render();
    this.renderTimings(result.timing || {});
    $('download-png').disabled = false;
    $('download-json').disabled = false;
  }

  setPhoto(file, result) {
    if (this.file !== file) {
      if (this.objectUrl) URL.revokeObjectURL(this.objectUrl);
      this.objectUrl = URL.createObjectURL(file);
      this.file = file;
    }
    const img = $('photo');
    $('single-figure').hidden = false;
    $('overlay').replaceChildren();
    if (img.src !== this.objectUrl) img.src = this.objectUrl;
    return img.decode().catch(() => {});  // a broken image shows as such; the error is elsewhere
  }

  clear() {
    this.result = null;
    $('single-figure').hidden = true;
    $('overlay').replaceChildren();
    $('face-count').textContent = '–';
    $('download-png').disabled = true;
    $('download-json').disabled = true;
    this.renderTimings({});
  }

  showError(message) {
    const el = $('single-error');
    el.textContent = message;
    el.hidden = !message;
  }

  render() {
    $('threshold-value').textContent = this.threshold().toFixed(2);
    const result = this.result;
    if (!result) return;
    const faces = visibleFaces(result, this.threshold());
    $('face-count').textContent = String(faces.length);
    $('face-word').textContent = faces.length === 1 ? 'face' : 'faces';
    const overlay = $('overlay');
    overlay.dataset.width = result.width;
    overlay.dataset.height = result.height;
    overlay.replaceChildren(...faces.map((face) => boxElement(face, result)));
    this.renderCaption();
  }

  renderCaption() {
    const img = $('photo');
    const { width, height } = this.result;
    let text = `${this.file.name} · ${width}×${height} px`;
    // The boxes are drawn in percentages of the shown picture, so they are right whenever the
    // browser shows the same upright picture the server decoded; say so when it does not.
    if (img.naturalWidth && (img.naturalWidth !== width || img.naturalHeight !== height)) {
      text += ` · note: the browser shows it as ${img.naturalWidth}×${img.naturalHeight}` +
              ' (EXIF orientation handled differently); boxes are scaled to fit.';
    }
    $('photo-caption').textContent = text;
  }

  renderTimings(timing) {
    for (const cell of document.querySelectorAll('#timings td')) {
      const value = timing[cell.dataset.key];
      cell.textContent = cell.dataset.key === 'batch_size' ? (value ?? '–') : formatMs(value);
    }
  }

  downloadPng() {
    if (!this.result) return;
    const canvas = annotatedCanvas($('photo'), this.result, this.threshold());
    canvas.toBlob((blob) => saveBlob(blob, `${baseName(this.file.name)}_faces.png`), 'image/png');
  }

  downloadJson() {
    if (!this.result) return;
    const { width, height, timing } = this.result;
    const json = {
      name: this.file.name,
      score_threshold: this.threshold(),
      width,
      height,
      faces: visibleFaces(this.result, this.threshold()),
      timing,
    };
    saveText(`${JSON.stringify(json, null, 2)}\n`, `${baseName(this.file.name)}_faces.json`,
             'application/json');
  }
}

function boxElement(face, result) {
  const [x1, y1, x2, y2] = face.box;
  const el = document.createElement('div');
  el.className = 'face-box';
  el.style.left = `${(100 * x1) / result.width}%`;
  el.style.top = `${(100 * y1) / result.height}%`;
  el.style.width = `${(100 * (x2 - x1)) / result.width}%`;
  el.style.height = `${(100 * (y2 - y1)) / result.height}%`;
  // The box in the picture's pixels, for tests and for anyone inspecting the page.
  el.dataset.box = face.box.join(',');
  el.dataset.score = face.score;
  const label = document.createElement('span');
  label.textContent = face.score.toFixed(2);
  el.append(label);
  // The five landmarks (models that give them), placed within the box.
  for (const [x, y] of face.landmarks || []) {
    const dot = document.createElement('i');
    dot.className = 'face-landmark';
    dot.style.left = `${(100 * (x - x1)) / (x2 - x1)}%`;
    dot.style.top = `${(100 * (y - y1)) / (y2 - y1)}%`;
    el.append(dot);
  }
  return el;
}
