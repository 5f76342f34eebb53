// Saving things the user asked for: a Blob through a temporary link, and CSV quoting.

export function saveBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  // Revoke later: revoking at once can cancel the download in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function saveText(text, filename, type) {
  saveBlob(new Blob([text], { type }), filename);
}

// RFC 4180: quote fields holding a comma, quote or line break; double inner quotes.
export function csvField(value) {
  const s = value == null ? '' : String(value);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function baseName(name) {
  return (name || 'image').replace(/\.[^.]+$/, '');
}
