'use strict';
// The chaos plugin (plugins/chaos.c) as a Node handler, word for word and
// message for message as tests/handlers/pychaos.py (which lists the
// words). Type: nodechaos.
const { handler, Retry, Fail } = require('../../clients/node/handler');

const NUMBER = /^(fail|later|sleep|polite|exit|big):([0-9]+)$/;
const ok = (task) => `ok attempt=${task.attempt}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

handler('nodechaos', async (task, ctx) => {
  const payload = task.payload;
  if (payload.subarray(0, 5).toString('latin1') === 'echo:') return payload;
  if (payload.length >= 512 || payload.includes(0)) throw new Fail('payload is not a chaos command');
  const text = payload.toString('latin1');
  if (text === 'ok') return ok(task);
  if (text === 'fatal') throw new Fail('fatal: asked to fail for good');
  if (text === 'crash') {
    process.kill(process.pid, 'SIGSEGV');
    return sleep(60000);
  }
  if (text === 'raise') throw new Error('raised on purpose');
  if (text === 'print') {
    console.log('printed to stdout');
    return ok(task);
  }
  if (text === 'log') {
    ctx.log('a line from the handler', 'info');
    return ok(task);
  }
  if (text === 'parents') {
    // As tests/plugins/parents.c: what each parent ended with.
    return task.parents.map((p) => (p.ok ? `${p.name}=ok:${p.result.toString('latin1')};` : `${p.name}=dead;`)).join('') || 'none';
  }
  const m = NUMBER.exec(text);
  if (!m) throw new Fail(`unknown chaos command '${text}'`);
  const n = Number(m[2]);
  switch (m[1]) {
    case 'fail':
      if (task.attempt <= n) throw new Retry(`fail:${n}: attempt ${task.attempt} fails`);
      return ok(task);
    case 'later':
      if (task.attempt > 1) return ok(task);
      throw new Retry(`later:${n}: asked to come back in ${n} ms`, { delay: n });
    case 'exit': process.exit(n); break;
    case 'big': return Buffer.alloc(n, 'x');
    case 'sleep': await sleep(n); return ok(task);
    default: { // polite
      const end = Date.now() + n;
      while (Date.now() < end && !ctx.cancelled) await sleep(10);
      return ok(task);
    }
  }
  return ok(task);
});
