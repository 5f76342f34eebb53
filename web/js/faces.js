// Pure helpers over detection results: filtering by score, formatting, annotated images.

// The threshold the UI sends with each request: low, so that the slider can filter in the
// browser without uploading again. The server's default threshold is the slider's start.
export const REQUEST_THRESHOLD = 0.2;

export function visibleFaces(result, threshold) {
  return (result && result.faces ? result.faces : []).filter((f) => f.score >= threshold);
}

export function formatMs(ms) {
  if (ms == null || Number.isNaN(ms)) return '–';
  return ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`;
}

export function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

// Draws the photo with its boxes at full resolution. `img` must be loaded; the browser draws it
// upright (EXIF applied), which is the frame the API's boxes are in.
export function annotatedCanvas(img, result, threshold) {
  const canvas = document.createElement('canvas');
  canvas.width = result.width;
  canvas.height = result.height;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0, result.width, result.height);
  const line = Math.max(2, Math.round(Math.max(result.width, result.height) / 400));
  const fontPx = Math.max(12, line * 6);
  ctx.lineWidth = line;
  ctx.font = `${fontPx}px sans-serif`;
  ctx.textBaseline = 'bottom';
  for (const face of visibleFaces(result, threshold)) {
    const [x1, y1, x2, y2] = face.box;
    ctx.strokeStyle = '#22d37f';
    ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    const label = face.score.toFixed(2);
    const w = ctx.measureText(label).width + line * 2;
    const top = Math.max(fontPx + 2, y1);
    ctx.fillStyle = '#22d37f';
    ctx.fillRect(x1 - line / 2, top - fontPx - 2, w, fontPx + 2);
    ctx.fillStyle = '#000';
    ctx.fillText(label, x1 + line / 2, top);
    ctx.fillStyle = '#ffd23f';
    for (const [x, y] of face.landmarks || []) {
      ctx.beginPath();
      ctx.arc(x, y, line * 1.5, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
  return canvas;
}
