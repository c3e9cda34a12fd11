'use strict';
// One wharf call through the Node client, for the parity tests: it prints
// what the call answered and exits with the error's exit code, as the
// wharf CLI does for the same call. The same commands as driver.py.
const path = require('path');
const wharf = require(path.resolve(__dirname, '..', '..', 'clients', 'node'));

function opt(args, name) {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const [, value] = args.splice(i, 2);
  return value;
}

// The CLI's (and Python's) field names, for comparing.
const NAMES = {
  nowMs: 'now_ms', enqueuedAtMs: 'enqueued_at_ms', sinceMs: 'since_ms',
  cancelRequested: 'cancel_requested', dueAtMs: 'due_at_ms',
  diedAtMs: 'died_at_ms', resultBytes: 'result_bytes', expiresInMs: 'expires_in_ms',
  timeoutMs: 'timeout_ms', maxAttempts: 'max_attempts', expiresAtMs: 'expires_at_ms',
};

async function main(argv) {
  const [url, op, type, ...args] = argv;
  const strict = args.includes('--strict');
  if (strict) args.splice(args.indexOf('--strict'), 1);
  process.removeAllListeners('warning');
  process.on('warning', (w) => process.stderr.write(`wharf: ${w.message}\n`));
  const c = new wharf.Client(url, { strict });
  try {
    if (op === 'enqueue') {
      const id = opt(args, '--id');
      const delay = opt(args, '--delay');
      const trace = opt(args, '--trace');
      const num = (name) => { const v = opt(args, name); return v ? Number(v) : undefined; };
      const timeout = num('--timeout');
      const maxAttempts = num('--max-attempts');
      const expireIn = num('--expire-in');
      const r = await c.enqueue(type, args[0], {
        id, trace, delay: delay ? Number(delay) : undefined, timeout, maxAttempts, expireIn,
      });
      process.stdout.write(`${r.id}\n`);
      if (r.duplicate) process.stderr.write(`duplicate: task '${r.id}' is already enqueued\n`);
    } else if (op === 'many') {
      const attempts = opt(args, '--max-attempts');
      for (const r of await c.enqueueMany(type, args, { maxAttempts: attempts ? Number(attempts) : undefined })) {
        if (r instanceof Error) throw r;
        process.stdout.write(`${r.id}\n`);
      }
    } else if (op === 'result') {
      const wait = opt(args, '--wait');
      process.stdout.write(await c.result(type, args[0], { wait: wait ? Number(wait) : undefined }));
    } else if (op === 'status') {
      const s = await c.status(type, args[0]);
      const out = {};
      for (const k of Object.keys(s).sort((a, b) => (NAMES[a] || a).localeCompare(NAMES[b] || b))) out[NAMES[k] || k] = s[k];
      process.stdout.write(`${JSON.stringify(out).replace(/,"/g, ', "').replace(/":/g, '": ')}\n`);
      return s.state === 'unknown' ? 1 : 0;
    } else if (op === 'cancel') {
      const r = await c.cancel(type, args[0]);
      process.stdout.write(`${`${r.outcome} ${r.detail}`.trim()}\n`);
    }
    return 0;
  } finally {
    await c.close();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
  process.stderr.write(`wharf: ${e.message}\n`);
  process.exit(e instanceof wharf.WharfError ? e.exitCode : 70);
});
