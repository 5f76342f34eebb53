// Starts the real `mogserve serve --port 0` for the browser tests and waits until it is ready.

import { spawn } from 'node:child_process';

// Resolves with { url, stop() } once /readyz answers 200; rejects on exit or timeout.
export function startServer({ binary, args = [], timeoutMs = 90000, log = () => {} }) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['serve', '--port', '0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let url = null;
    let settled = false;
    const fail = (message) => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`${message}\n--- mogserve output ---\n${output.slice(-4000)}`));
    };
    const timer = setTimeout(() => fail(`mogserve was not ready within ${timeoutMs} ms`),
                             timeoutMs);
    const onData = (chunk) => {
      const text = chunk.toString();
      output += text;
      log(text);
      const m = !url && output.match(/listening on (http:\/\/127\.0\.0\.1:\d+)\//);
      if (m) {
        url = m[1];
        pollReady();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code, signal) => fail(`mogserve exited early (${code ?? signal})`));

    const stop = () => new Promise((done) => {
      if (child.exitCode !== null) return done();
      child.removeAllListeners('exit');
      child.on('exit', () => done());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10000).unref();
    });

    async function pollReady() {
      while (!settled) {
        try {
          const r = await fetch(`${url}/readyz`);
          if (r.ok) {
            settled = true;
            clearTimeout(timer);
            resolve({ url, stop, output: () => output });
            return;
          }
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  });
}
