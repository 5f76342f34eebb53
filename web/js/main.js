// Entry point: hash routing between the four views, the API key dialog, and start-up (wait for
// the model, then read its defaults so the thresholds start where the server's do).

import { apiKey, getModels, isReady, setApiKey } from './api.js';
import { BatchView } from './batch.js';
import { Dashboard } from './dashboard.js';
import { SingleView } from './single.js';
import { StreamsView } from './streams.js';

const $ = (id) => document.getElementById(id);
const VIEWS = ['single', 'batch', 'dashboard', 'streams'];

const single = new SingleView();
const dashboard = new Dashboard();
const batch = new BatchView({
  openInSingle: (file, result) => {
    location.hash = '#single';
    single.show(file, result);
  },
});
dashboard.onError = (message) => showBanner(message);
const streams = new StreamsView();
streams.onError = (message) => showBanner(message);

function currentView() {
  const name = location.hash.replace('#', '');
  return VIEWS.includes(name) ? name : 'single';
}

function route() {
  const view = currentView();
  for (const name of VIEWS) $(`view-${name}`).hidden = name !== view;
  for (const a of document.querySelectorAll('.tabs a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  // Poll only while the dashboard is visible: a hidden chart is work nobody sees.
  if (view === 'dashboard' && document.visibilityState === 'visible') dashboard.start();
  else dashboard.stop();
  if (view === 'streams' && document.visibilityState === 'visible') streams.start();
  else streams.stop();
}

function showBanner(message) {
  const banner = $('banner');
  banner.textContent = message;
  banner.hidden = !message;
}

function wireApiKeyDialog() {
  const dialog = $('api-key-dialog');
  const input = $('api-key-input');
  $('api-key-button').addEventListener('click', () => {
    input.value = apiKey();
    dialog.showModal();
  });
  dialog.addEventListener('close', () => {
    if (dialog.returnValue === 'save') setApiKey(input.value.trim());
    if (dialog.returnValue === 'clear') setApiKey('');
    if (dialog.returnValue !== 'cancel') {
      showBanner('');
      loadModel();
    }
  });
  window.addEventListener('mogserve:unauthorized', () => {
    showBanner('This server needs an API key: choose "API key" at the top right.');
  });
}

async function loadModel() {
  const status = $('server-status');
  while (!(await isReady())) {
    status.textContent = 'model warming up…';
    status.className = 'server-status bad';
    await new Promise((r) => setTimeout(r, 1000));
  }
  try {
    const { models } = await getModels();
    const model = models[0];
    status.textContent = `ready · ${model.name} · ${model.device} ${model.precision}`;
    status.className = 'server-status ok';
    dashboard.showModel(model);
    const threshold = model.defaults && model.defaults.score_threshold;
    if (threshold != null) {
      single.setDefaultThreshold(threshold);
      batch.setDefaultThreshold(threshold);
    }
    document.body.dataset.ready = 'true';  // lets tests (and people) know start-up is done
  } catch (e) {
    status.textContent = 'not available';
    status.className = 'server-status bad';
    if (e.status !== 401) showBanner(`Cannot read the model: ${e.message}`);
  }
}

window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', route);
document.addEventListener('paste', (e) => {
  if (currentView() === 'single') single.onPaste(e);
});
// A file dropped outside a drop zone would make the browser navigate away to it.
for (const type of ['dragover', 'drop']) {
  window.addEventListener(type, (e) => {
    if (!e.target.closest || !e.target.closest('.dropzone')) e.preventDefault();
  });
}
wireApiKeyDialog();
route();
loadModel();
