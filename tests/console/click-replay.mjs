// Drives the console page in headless Chromium over the DevTools protocol
// (cdp.mjs) the way a person would: open a dead task, press replay with a
// wrong token (refused), then with the right one (done). Prints what the
// page said and exits 0 when both went as expected.
//
//   node click-replay.mjs URL TOKEN [busy-first]
// URL is the console's page with #type=T&id=ID of a dead task. With
// busy-first, the page is opened while Redis does not answer: the script
// waits until the page says so, prints "busy" (the caller then lets Redis
// answer again), and goes on: the page must bring the task up by itself.
import { open } from './cdp.mjs';

const [url, token, mode] = process.argv.slice(2);
const { send, evaluate, until, finish } =
  await open("'message: ' + document.getElementById('message').textContent");

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
