// Streams: the server's video streams (/v1/streams) while the view is shown — a table with live
// stats polled every second, a form to add one, restart/remove buttons, and a tile per stream
// showing its latest detected frame (snapshot.jpg, fetched with the API key and shown as a blob)
// with the face count its results report over one Server-Sent Events connection
// (/v1/streams/events, read with fetch so that it too can carry the key).

import { addStream, apiKey, listStreams, removeStream, restartStream, streamSnapshot } from './api.js';

const $ = (id) => document.getElementById(id);
const POLL_MS = 1000;

const fmt = (v, digits = 1) => (v == null ? '–' : Number(v).toFixed(digits));

export class StreamsView {
  constructor() {
    this.timer = null;
    this.events = null;  // AbortController of the SSE connection
    this.faces = new Map();  // stream id → faces of its latest result (SSE)
    this.tiles = new Map();  // stream id → {li, img, url}
    this.onError = () => {};
    $('stream-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.add();
    });
  }

  start() {
    if (this.timer) return;
    this.poll();
    this.timer = setInterval(() => this.poll(), POLL_MS);
    this.listen();
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    if (this.events) this.events.abort();
    this.events = null;
  }

  async add() {
    const error = $('stream-form-error');
    error.hidden = true;
    const fps = Number($('stream-fps').value);
    try {
      await addStream({ id: $('stream-id').value.trim(), url: $('stream-url').value.trim(),
                        detect_fps: fps > 0 ? fps : 0 });
      $('stream-form').reset();
      this.poll();
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    }
  }

  async poll() {
    if (this.polling) return;
    this.polling = true;
    try {
      const { streams } = await listStreams();
      this.onError('');
      this.render(streams);
      await Promise.all(streams.map((s) => this.refreshTile(s)));
    } catch (e) {
      this.onError(`Streams: ${e.message}`);
    } finally {
      this.polling = false;
    }
  }

  render(streams) {
    const body = $('streams-body');
    body.replaceChildren();
    $('streams-empty').hidden = streams.length > 0;
    for (const s of streams) {
      const tr = document.createElement('tr');
      tr.dataset.stream = s.id;
      const error = s.error || s.last_error;
      const cells = [
        s.id, s.url, s.state + (error && s.state !== 'running' ? ` (${error.code})` : ''),
        fmt(s.fps.received), fmt(s.fps.decoded), fmt(s.fps.detected), fmt(s.fps.superseded),
        `${fmt(s.latency_ms.p50, 0)} / ${fmt(s.latency_ms.p99, 0)}`, fmt(s.lag_ms, 0),
        String(s.reconnects), String(this.faces.has(s.id) ? this.faces.get(s.id) : s.last.faces),
      ];
      const keys = ['id', 'url', 'state', 'received', 'decoded', 'detected', 'superseded',
                    'latency', 'lag', 'reconnects', 'faces'];
      cells.forEach((text, i) => {
        const td = document.createElement('td');
        td.dataset.key = keys[i];
        td.textContent = text;
        if (keys[i] === 'state') td.title = error ? error.message : '';
        tr.append(td);
      });
      const actions = document.createElement('td');
      for (const [label, action] of [['Restart', restartStream], ['Remove', removeStream]]) {
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'ghost';
        button.textContent = label;
        button.setAttribute('aria-label', `${label} ${s.id}`);
        button.addEventListener('click', async () => {
          try {
            await action(s.id);
          } catch (e) {
            this.onError(`Streams: ${e.message}`);
          }
          this.poll();
        });
        actions.append(button);
      }
      tr.append(actions);
      body.append(tr);
    }
    // Tiles of removed streams go.
    const ids = new Set(streams.map((s) => s.id));
    for (const [id, tile] of this.tiles) {
      if (ids.has(id)) continue;
      if (tile.url) URL.revokeObjectURL(tile.url);
      tile.li.remove();
      this.tiles.delete(id);
    }
  }

  tile(id) {
    let tile = this.tiles.get(id);
    if (tile) return tile;
    const li = document.createElement('li');
    li.className = 'stream-tile';
    li.dataset.stream = id;
    const img = document.createElement('img');
    img.alt = `Latest detected frame of ${id}`;
    const caption = document.createElement('span');
    caption.textContent = id;
    li.append(img, caption);
    $('stream-tiles').append(li);
    tile = { li, img, caption, url: null, frame: null };
    this.tiles.set(id, tile);
    return tile;
  }

  async refreshTile(s) {
    const tile = this.tile(s.id);
    const faces = this.faces.has(s.id) ? this.faces.get(s.id) : s.last.faces;
    tile.caption.textContent = `${s.id} · ${s.state} · ${faces} faces`;
    if (s.last.frame < 0 || s.last.frame === tile.frame) return;
    const blob = await streamSnapshot(s.id);
    if (!blob) return;
    if (tile.url) URL.revokeObjectURL(tile.url);
    tile.url = URL.createObjectURL(blob);
    tile.img.src = tile.url;
    tile.frame = s.last.frame;
  }

  // One SSE connection for every stream: the latest face count of each.
  async listen() {
    const controller = new AbortController();
    this.events = controller;
    const headers = {};
    if (apiKey()) headers.Authorization = `Bearer ${apiKey()}`;
    try {
      const response = await fetch('/v1/streams/events', { headers, signal: controller.signal });
      if (!response.ok) return;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
        let end;
        while ((end = text.indexOf('\n\n')) >= 0) {
          this.onEvent(text.slice(0, end));
          text = text.slice(end + 2);
        }
      }
    } catch {
      // aborted (view hidden) or the server went away: polling still shows the table
    }
  }

  onEvent(block) {
    let event = '';
    let data = null;
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      if (line.startsWith('data: ')) data = JSON.parse(line.slice(6));
    }
    if (event === 'frame' && data) this.faces.set(data.stream, data.faces.length);
    if (event === 'removed' && data) this.faces.delete(data.stream);
  }
}
