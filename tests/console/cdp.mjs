// Headless Chromium over the DevTools protocol, for the console's page
// tests (click-replay.mjs, bulk-replay.mjs): the protocol runs over
// --remote-debugging-pipe (fds 3 and 4, messages ended by NUL), so any
// Node from Debian 12 on does, with no library. open() starts Chromium on
// a fresh profile with one page attached and gives:
//   send(method, params)      a command to the page; resolves to its answer
//   evaluate(expression)      its value in the page (promises awaited)
//   until(expression, what)   polls it until true, or ends the run naming what
//   on(method, fn)            calls fn(params) for each such event
//   finish(code, message)     prints message, stops Chromium, exits
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function open(failureText) {
  const profile = mkdtempSync(join(tmpdir(), 'wharf-console-'));
  const chrome = spawn('chromium', [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
    '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync',
    `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });

  function finish(code, message) {
    console.log(message);
    chrome.kill('SIGKILL');
    try { rmSync(profile, { recursive: true, force: true }); } catch (e) { /* gone */ }
    process.exit(code);
  }
  // Generous: a loaded machine starts Chromium and answers slowly; each
  // step waits for what the page shows, not for a time.
  setTimeout(() => finish(1, 'timed out'), 150000);
  chrome.on('error', (e) => finish(1, `chromium: ${e.message}`));

  const toChrome = chrome.stdio[3], fromChrome = chrome.stdio[4];
  let next = 0, pending = '', session;
  const waiting = new Map(), handlers = new Map();
  fromChrome.on('data', (d) => {
    pending += d.toString();
    let end;
    while ((end = pending.indexOf('\0')) >= 0) {
      const msg = JSON.parse(pending.slice(0, end));
      pending = pending.slice(end + 1);
      if (msg.id && waiting.has(msg.id)) {
        waiting.get(msg.id)(msg);
        waiting.delete(msg.id);
      } else if (msg.method && handlers.has(msg.method)) {
        handlers.get(msg.method)(msg.params || {});
      }
    }
  });
  function send(method, params, toBrowser) {
    const id = ++next;
    const msg = { id, method, params: params || {} };
    if (!toBrowser) msg.sessionId = session;
    toChrome.write(JSON.stringify(msg) + '\0');
    return new Promise((resolve) => waiting.set(id, resolve));
  }
  const created = await send('Target.createTarget', { url: 'about:blank' }, true);
  const attached = await send('Target.attachToTarget',
    { targetId: created.result.targetId, flatten: true }, true);
  session = attached.result.sessionId;
  async function evaluate(expression) {
    const r = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    return r.result && r.result.result ? r.result.result.value : undefined;
  }
  async function until(expression, what) {
    for (const end = Date.now() + 60000; Date.now() < end;) {
      if (await evaluate(expression)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    finish(1, `never: ${what}; ${failureText ? await evaluate(failureText) : ''}`);
  }
  const on = (method, fn) => handlers.set(method, fn);
  return { send, evaluate, until, on, finish };
}
