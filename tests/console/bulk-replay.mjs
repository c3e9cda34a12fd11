// Drives the console's dead set search in headless Chromium (cdp.mjs) the
// way a person would: the page opens on a search, counts its matches,
// then "replay all matching" is pressed with the token in its field, the
// confirmation (which names the count) accepted, and the page goes on a
// page of records a request until it says it is done. Prints the count,
// what the confirmation asked and the last progress line; exits 0 when
// the replay went to its end.
//
//   node bulk-replay.mjs URL TOKEN
// URL is the console's page with #type=T&grep=TEXT (or another filter).
import { open } from './cdp.mjs';

const [url, token] = process.argv.slice(2);
const { send, evaluate, until, on, finish } = await open(
  "'count: ' + document.getElementById('search-count').textContent + " +
  "'; progress: ' + document.getElementById('bulk-progress').textContent");
let asked = null;
on('Page.javascriptDialogOpening', (p) => {
  asked = p.message;
  send('Page.handleJavaScriptDialog', { accept: true });
});
await send('Page.enable');
await send('Page.navigate', { url });
await until("/^[0-9]+ matching$/.test(document.getElementById('search-count').textContent)",
            'the count of the matches');
const count = await evaluate("document.getElementById('search-count').textContent");
await until("!document.getElementById('bulk').hidden", 'the bulk buttons shown');
await evaluate(`document.getElementById('token').value = ${JSON.stringify(token)};
                document.getElementById('bulk-replay').click(); true`);
await until("/, done$/.test(document.getElementById('bulk-progress').textContent)",
            'the replay of every match');
const progress = await evaluate("document.getElementById('bulk-progress').textContent");
finish(0, `count: ${count}\nasked: ${asked}\nprogress: ${progress}`);
