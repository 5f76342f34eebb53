// The mogserve HTTP API, as the UI uses it. One place for the API key and for turning the
// server's `{"error": {"code", "message"}}` bodies into exceptions the views can show.

const KEY_STORAGE = 'mogserve.apiKey';

// sessionStorage, not localStorage: the key should not outlive the tab.
export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || '';
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;  // HTTP status; 0 when the server could not be reached
    this.code = code;
  }
}

async function call(path, init = {}) {
  const headers = new Headers(init.headers || {});
  const key = apiKey();
  if (key) headers.set('Authorization', `Bearer ${key}`);
  let response;
  try {
    response = await fetch(path, { ...init, headers });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', `cannot reach the server (${e.message})`);
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;  // not JSON: a proxy's error page, say; the text is the message below
  }
  if (!response.ok) {
    const error = body && body.error;
    if (response.status === 401) window.dispatchEvent(new CustomEvent('mogserve:unauthorized'));
    throw new ApiError(response.status, (error && error.code) || `http_${response.status}`,
                       (error && error.message) || text.slice(0, 200) || response.statusText);
  }
  return body;
}

// One photo, sent as a multipart form with a single `image` field: the server sniffs the format
// from the bytes, so a file whose browser-given type is wrong or empty still works.
export function detect(file, { scoreThreshold, signal } = {}) {
  const form = new FormData();
  form.append('image', file, file.name || 'image');
  const query = scoreThreshold == null ? '' : `?score_threshold=${scoreThreshold}`;
  return call(`/v1/detect${query}`, { method: 'POST', body: form, signal });
}

export const getStats = () => call('/v1/stats');

export const listStreams = () => call('/v1/streams');
export const addStream = (stream) =>
  call('/v1/streams', { method: 'POST', body: JSON.stringify(stream),
                        headers: { 'Content-Type': 'application/json' } });
export const removeStream = (id) => call(`/v1/streams/${encodeURIComponent(id)}`,
                                         { method: 'DELETE' });
export const restartStream = (id) =>
  call(`/v1/streams/${encodeURIComponent(id)}/restart`, { method: 'POST' });

// The stream's latest detected frame with its boxes, as a Blob; null when there is none yet.
export async function streamSnapshot(id) {
  const headers = {};
  if (apiKey()) headers.Authorization = `Bearer ${apiKey()}`;
  const r = await fetch(`/v1/streams/${encodeURIComponent(id)}/snapshot.jpg`, { headers });
  return r.ok ? r.blob() : null;
}
export const getModels = () => call('/v1/models');

export async function isReady() {
  try {
    const r = await fetch('/readyz');
    return r.ok;
  } catch {
    return false;
  }
}
