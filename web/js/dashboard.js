// Dashboard: polls /v1/stats every second while shown and plots the last few minutes with uPlot
// (bundled from npm into the binary; window.uPlot). Without uPlot the numbers still update.

import { getStats } from './api.js';

const $ = (id) => document.getElementById(id);
const POLL_MS = 1000;
const HISTORY_POINTS = 180;  // 3 minutes at one point a second
const MIB = 1024 * 1024;

const COLORS = ['#0f7b54', '#1a73e8', '#d93025', '#f29900'];

export class Dashboard {
  constructor() {
    this.timer = null;
    this.charts = null;
    // Columns for uPlot: time (s since epoch), then one array per series.
    this.history = {
      throughput: [[], []],
      latency: [[], [], [], []],
      queue: [[], []],
      busy: [[], []],
      memory: [[], [], []],
    };
    this.onError = () => {};
  }

  start() {
    if (this.timer) return;
    if (!this.charts) this.charts = this.createCharts();
    this.poll();
    this.timer = setInterval(() => this.poll(), POLL_MS);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  async poll() {
    if (this.polling) return;  // a slow answer must not pile up requests
    this.polling = true;
    try {
      const stats = await getStats();
      this.onError('');
      this.update(stats);
    } catch (e) {
      this.onError(`Dashboard: ${e.message}`);
    } finally {
      this.polling = false;
    }
  }

  update(s) {
    const recent = s.recent || {};
    const latency = recent.latency_ms || {};
    const memory = s.memory || {};
    const requests = s.requests || {};
    const failed = Object.entries(requests)
      .filter(([k]) => k !== 'done')
      .reduce((n, [, v]) => n + v, 0);
    setText('stat-ips', (recent.images_per_s ?? 0).toFixed(1));
    setText('stat-latency', [latency.p50, latency.p95, latency.p99]
      .map((v) => (v ? v.toFixed(0) : '–')).join(' / ') + ' ms');
    setText('stat-queue', String(s.queue_depth ?? 0));
    setText('stat-batch', (s.mean_batch_size ?? 0).toFixed(2));
    setText('stat-busy', `${((s.engine_busy_ratio ?? 0) * 100).toFixed(0)} %`);
    setText('stat-memory', memory.in_use_bytes == null ? 'n/a'
      : `${(memory.in_use_bytes / MIB).toFixed(1)} MiB`);
    setText('stat-done', `${requests.done ?? 0} / ${failed}`);
    setText('stat-uptime', formatUptime(s.uptime_s ?? 0));
    $('stat-done').dataset.done = requests.done ?? 0;
    $('stat-ips').dataset.value = recent.images_per_s ?? 0;

    const t = Date.now() / 1000;
    const h = this.history;
    push(h.throughput, t, [recent.images_per_s ?? 0]);
    push(h.latency, t, [latency.p50 ?? null, latency.p95 ?? null, latency.p99 ?? null]);
    push(h.queue, t, [s.queue_depth ?? 0]);
    push(h.busy, t, [s.engine_busy_ratio ?? 0]);
    push(h.memory, t, [memory.in_use_bytes == null ? null : memory.in_use_bytes / MIB,
                       memory.reserved_bytes == null ? null : memory.reserved_bytes / MIB]);
    if (!this.charts) return;
    this.charts.throughput.setData(h.throughput);
    this.charts.latency.setData(h.latency);
    this.charts.queue.setData(h.queue);
    this.charts.busy.setData(h.busy);
    this.charts.memory.setData(h.memory);
    // batch_size_counts[i] = batches of size i; index 0 is never used.
    const counts = (s.batch_size_counts || []).slice(1);
    const sizes = counts.map((_, i) => i + 1);
    this.charts.batches.setData([sizes.length ? sizes : [1], counts.length ? counts : [0]]);
  }

  createCharts() {
    const uPlot = window.uPlot;
    if (typeof uPlot !== 'function') {
      $('charts-missing').hidden = false;
      return null;
    }
    const line = (label, i, extra = {}) => ({ label, stroke: COLORS[i], width: 2, ...extra });
    const make = (id, series, extra = {}) => {
      const el = $(id);
      const chart = new uPlot({
        width: chartWidth(el),
        height: 180,
        series: [{}, ...series],
        axes: [{}, { size: 50 }],
        scales: { y: { range: (u, min, max) => [0, Math.max(max || 0, 1e-9) * 1.1] } },
        legend: { live: false },
        ...extra,
      }, [[], ...series.map(() => [])], el);
      // Charts follow their container's width (narrow screens, resized windows).
      new ResizeObserver(() => chart.setSize({ width: chartWidth(el), height: 180 })).observe(el);
      return chart;
    };
    const barsPaths = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.6, 40] }) : null;
    return {
      throughput: make('chart-throughput', [line('images/s', 0, { fill: '#0f7b5422' })]),
      latency: make('chart-latency', [line('p50', 0), line('p95', 1), line('p99', 2)]),
      queue: make('chart-queue', [line('queued images', 1, { fill: '#1a73e822' })]),
      busy: make('chart-busy', [line('busy', 3, { fill: '#f2990022' })],
                 { scales: { y: { range: [0, 1] } } }),
      memory: make('chart-memory', [line('in use', 0), line('reserved', 1)]),
      batches: make('chart-batches',
                    [{ label: 'batches', fill: '#1a73e8aa', stroke: '#1a73e8', paths: barsPaths,
                       points: { show: false } }],
                    { scales: { x: { time: false, range: (u, min, max) => [min - 0.5, max + 0.5] },
                                y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
                      axes: [{ label: 'batch size', incrs: [1, 2, 4, 8, 16] }, { size: 50 }] }),
    };
  }

  showModel(model) {
    const rows = [
      ['Model', model.name],
      ['Variant', model.variant || '—'],
      ['Device', model.device],
      ['Precision', model.precision],
      ['Threads', model.threads],
      ['Instances', model.instances],
      ['Input policy', model.input_policy],
      ['Scheduler', model.scheduler],
      ['Weights', model.weights],
      ['Defaults', model.defaults ? Object.entries(model.defaults)
        .map(([k, v]) => `${k}=${v}`).join(', ') : '—'],
    ];
    $('model-info').replaceChildren(...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v == null || v === '' ? '—' : String(v);
      return [dt, dd];
    }));
    $('buffer-plan').textContent = model.buffer_plan || '—';
  }
}

function setText(id, text) {
  $(id).textContent = text;
}

function push(columns, t, values) {
  columns[0].push(t);
  values.forEach((v, i) => columns[i + 1].push(v));
  if (columns[0].length > HISTORY_POINTS) for (const c of columns) c.shift();
}

function chartWidth(el) {
  return Math.max(200, Math.floor(el.clientWidth || el.parentElement.clientWidth - 20));
}

function formatUptime(s) {
  if (s < 120) return `${s.toFixed(0)} s`;
  if (s < 7200) return `${(s / 60).toFixed(0)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
