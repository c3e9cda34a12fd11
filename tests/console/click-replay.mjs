// Drives the console page in headless Chromium over the DevTools protocol
// the way a person would: open a dead task, press replay with a wrong
// token (refused), then with the right one (done). Prints what the page
// said and exits 0 when both went as expected. The protocol runs over
// --remote-debugging-pipe (fds 3 and 4, messages ended by NUL), so any
// Node from Debian 12 on does.
//
//   node click-replay.mjs URL TOKEN [busy-first]
// URL is the console's page with #type=T&id=ID of a dead task. With
// busy-first, the page is opened while Redis does not answer: the script
// waits until the page says so, prints "busy" (the caller then lets Redis
// answer again), and goes on: the page must bring the task up by itself.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [url, token, mode] = process.argv.slice(2);
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
// step below waits for what the page shows, not for a time.
setTimeout(() => finish(1, 'timed out'), 150000);
chrome.on('error', (e) => finish(1, `chromium: ${e.message}`));

const toChrome = chrome.stdio[3], fromChrome = chrome.stdio[4];
let next = 0, pending = '';
const waiting = new Map();
fromChrome.on('data', (d) => {
  pending += d.toString();
  let end;
  while ((end = pending.indexOf('\0')) >= 0) {
    const msg = JSON.parse(pending.slice(0, end));
    pending = pending.slice(end + 1);
    if (msg.id && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    }
  }
});
let session;
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
  finish(1, `never: ${what}; message: ${await evaluate("document.getElementById('message').textContent")}`);
}

await send('Page.navigate', { url });
if (mode === 'busy-first') {
  await until("document.getElementById('message').className === 'error'", 'the page saying the console is busy');
  console.log('busy');
}
await until("document.getElementById('detail-status') && document.getElementById('detail-status').textContent === 'dead'", 'the task shown as dead');
await until("!document.getElementById('actions').hidden", 'the action buttons shown');

await evaluate("document.getElementById('token').value = 'not-the-token-at-all'; document.getElementById('act-replay').click(); true");
await until("document.getElementById('message').textContent.startsWith('replay: a valid token')", 'a wrong token refused');
const refused = await evaluate("document.getElementById('message').textContent");

// A loaded machine may find the console busy (503, try again): the page
// says so, and a user clicks again, as this does.
await evaluate(`document.getElementById('token').value = ${JSON.stringify(token)}; true`);
for (let tries = 0; ; tries++) {
  await until("!document.getElementById('act-replay').disabled", 'the replay button enabled');
  await evaluate("document.getElementById('message').textContent = ''; document.getElementById('act-replay').click(); true");
  await until("document.getElementById('message').textContent.startsWith('replay: ')", 'an answer to the replay');
  const said = await evaluate("document.getElementById('message').textContent");
  if (said === 'replay: done') break;
  if (tries >= 20 || !/slow|unreachable|did not answer|try again/.test(said))
    finish(1, `never: the replay done; message: ${said}`);
  await new Promise((r) => setTimeout(r, 500));
}
await until("document.getElementById('detail-status').textContent !== 'dead'", 'the task no longer dead');
const status = await evaluate("document.getElementById('detail-status').textContent");
finish(0, `refused: ${refused}\nreplayed; status now ${status}`);
