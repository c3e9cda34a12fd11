'use strict';
// wharf handlers in Node, run by wharf's coprocess plugin:
//
//   // myapp/handlers.js
//   const { handler, Fail } = require('wharf-client/handler');
//   handler('resize', async (task, ctx) => {
//     if (task.payload.length === 0) throw new Fail('empty payload');
//     ctx.log(`resizing ${task.payload.length} bytes`);
//     return task.payload.reverse();     // the result: Buffer, string or nothing
//   });
//
//   node node_modules/wharf-client/handler.js ./myapp/handlers.js
//
// The host starts that program (`command` in the manifest), writes task
// frames to its stdin and reads the answers from its stdout, in the wire
// format of docs/handlers.md. Return (ok, with the result), throw Retry
// (the type's backoff, or { delay } ms), throw Fail (dead at once), or
// throw anything else (a retry whose reason is the error's message).
// Tasks run at once up to the host's `inflight`, each answered as it
// ends. Node's own modules only; console.log goes to stderr, which the
// host logs.
const fs = require('fs');
const path = require('path');

// The highest protocol version this library speaks (2: a task's parents).
const PROTOCOL_VERSION = 2;
// The longest frame either side may send (docs/handlers.md).
const FRAME_MAX = (64 << 20) + 65536;
const LEVELS = { debug: 0, info: 1, warn: 2, warning: 2, error: 3 };

const handlers = new Map();

class Retry extends Error {
  // delay: ms until the next attempt (capped by max_retry_delay);
  // undefined: the type's backoff.
  constructor(reason = 'retry', { delay } = {}) {
    super(reason);
    this.name = 'Retry';
    this.delay = delay;
  }
}

class Fail extends Error {
  constructor(reason = 'failed') {
    super(reason);
    this.name = 'Fail';
  }
}

// Registers fn(task, ctx) as the handler of type.
function handler(type, fn) {
  if (typeof fn !== 'function') throw new TypeError(`handler('${type}'): not a function`);
  if (handlers.has(type)) throw new Error(`two handlers for type '${type}'`);
  handlers.set(type, fn);
  return fn;
}

function frame(kind, request, body) {
  const out = Buffer.allocUnsafe(9 + body.length);
  out.writeUInt32BE(5 + body.length, 0);
  out[4] = kind.charCodeAt(0);
  out.writeUInt32BE(request, 5);
  body.copy(out, 9);
  return out;
}

// An ok frame: the commonest, built in one buffer.
function okFrame(request, data) {
  const out = Buffer.allocUnsafe(13 + data.length);
  out.writeUInt32BE(9 + data.length, 0);
  out[4] = 0x4f; // 'O'
  out.writeUInt32BE(request, 5);
  out.writeUInt32BE(data.length, 9);
  data.copy(out, 13);
  return out;
}

// The u64 and i64 fields as Numbers (exact up to 2^53), without BigInt.
function u64(buf, at) {
  return buf.readUInt32BE(at) * 4294967296 + buf.readUInt32BE(at + 4);
}

function i64(buf, at) {
  return buf.readInt32BE(at) * 4294967296 + buf.readUInt32BE(at + 4);
}

function blob(data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length, 0);
  return Buffer.concat([len, data]);
}

function asBuffer(value) {
  if (value === undefined || value === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return Buffer.from(value);
  throw new TypeError(`a handler returns a Buffer, a string or nothing, not ${typeof value}`);
}

class Context {
  constructor(runner, request, deadline) {
    // Date.now() at the task's deadline, or null for none.
    this.deadline = deadline;
    // Made on first use: an AbortController costs more than a no-op task.
    this.controller = null;
    this.aborted = false;
    this.runner = runner;
    this.request = request;
  }

  // Aborted once the host cancels the task (its deadline passed, or an
  // operator cancelled it): pass it to fetch() and the like.
  get signal() {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(new Error('cancelled by the host'));
    }
    return this.controller.signal;
  }

  get cancelled() { return this.aborted; }

  abort() {
    this.aborted = true;
    if (this.controller !== null) this.controller.abort(new Error('cancelled by the host'));
  }

  // ms to the deadline (0 once passed), null for none.
  timeLeft() { return this.deadline === null ? null : Math.max(0, this.deadline - Date.now()); }

  // A line in the host's log, with the plugin and this task named.
  log(message, level = 'info') {
    const n = LEVELS[level] === undefined ? 1 : LEVELS[level];
    this.runner.write(frame('L', this.request, Buffer.concat([Buffer.from([n]), blob(Buffer.from(String(message), 'utf8'))])));
  }
}

class Runner {
  // writeOut(buf) writes frames to the host. Frames are queued and written
  // together: at the end of each chunk read from stdin (the answers of the
  // tasks it held that answered at once) and once per turn of the event
  // loop (those that answered later), so many tasks in flight cost a few
  // writes, not one each.
  constructor(table, writeOut) {
    this.handlers = table;
    this.writeOut = writeOut;
    this.version = 1; // the protocol version agreed by the hello
    this.queued = [];
    this.flushing = null;
    this.chunks = [];
    this.buffered = 0;
    this.running = new Map();
    this.closing = false;
  }

  write(buf) {
    this.queued.push(buf);
    if (this.flushing === null) this.flushing = setImmediate(() => this.flush());
  }

  flush() {
    if (this.flushing !== null) {
      clearImmediate(this.flushing);
      this.flushing = null;
    }
    if (this.queued.length === 0) return;
    const out = this.queued.length === 1 ? this.queued[0] : Buffer.concat(this.queued);
    this.queued = [];
    this.writeOut(out);
  }

  data(chunk) {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    let buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    let at = 0;
    while (buf.length - at >= 4) {
      const length = buf.readUInt32BE(at);
      if (length < 5 || length > FRAME_MAX) this.broken(`a frame of length ${length}`);
      if (buf.length - at - 4 < length) break;
      const kind = String.fromCharCode(buf[at + 4]);
      const request = buf.readUInt32BE(at + 5);
      const body = buf.subarray(at + 9, at + 4 + length);
      at += 4 + length;
      if (kind === 'T') this.task(request, body);
      else if (kind === 'C') this.cancel(request);
      else if (kind === 'H') this.hello(body);
      else this.broken(`unknown frame kind '${kind}'`);
    }
    buf = buf.subarray(at);
    this.chunks = buf.length ? [buf] : [];
    this.buffered = buf.length;
    this.flush();
  }

  broken(why) {
    this.flush();
    process.stderr.write(`wharf handler: ${why}\n`);
    process.exit(70);
  }

  hello(body) {
    const offered = body.readUInt32BE(0);
    if (offered < 1) this.broken(`the host offers protocol version ${offered}`);
    // The hello offers the host's highest version; the answer is the one
    // both speak.
    this.version = Math.min(offered, PROTOCOL_VERSION);
    const v = Buffer.alloc(4);
    v.writeUInt32BE(this.version, 0);
    this.write(frame('R', 0, v));
  }

  task(request, body) {
    const attempt = body.readUInt32BE(0);
    const maxAttempts = body.readUInt32BE(4);
    const fence = u64(body, 8);
    const enqueuedAt = i64(body, 16);
    const deadlineIn = i64(body, 24);
    const fields = [];
    let at = 32;
    for (let i = 0; i < 4; i++) {
      const n = body.readUInt32BE(at);
      fields.push(body.subarray(at + 4, at + 4 + n));
      at += 4 + n;
    }
    // A workflow's child: what each parent ended with, in the order the
    // child named them.
    const parents = [];
    if (this.version >= 2) {
      const count = body.readUInt32BE(at);
      at += 4;
      for (let i = 0; i < count; i++) {
        let k = body.readUInt32BE(at);
        const name = body.subarray(at + 4, at + 4 + k).toString('utf8');
        at += 4 + k;
        const dead = body[at];
        k = body.readUInt32BE(at + 1);
        parents.push({ name, ok: dead === 0, result: Buffer.from(body.subarray(at + 5, at + 5 + k)) });
        at += 5 + k;
      }
    }
    if (at !== body.length) this.broken(`a task frame with ${body.length - at} bytes left over`);
    const task = {
      id: fields[0].toString('utf8'),
      type: fields[1].toString('utf8'),
      attempt,
      maxAttempts,
      fence,
      trace: fields[2].toString('latin1'),
      enqueuedAt,
      // A copy: the frame's buffer is reused for the next frames.
      payload: Buffer.from(fields[3]),
      parents,
    };
    const ctx = new Context(this, request, deadlineIn >= 0 ? Date.now() + deadlineIn : null);
    const fn = this.handlers.get(task.type);
    if (!fn) {
      this.write(frame('F', request, blob(Buffer.from(`no handler for type '${task.type}' in this program`))));
      return;
    }
    let result;
    try {
      result = fn(task, ctx);
    } catch (e) {
      this.failed(request, ctx, e);
      this.checkFinished();
      return;
    }
    if (result === null || typeof result !== 'object' || typeof result.then !== 'function') {
      // A plain value: answered now, without a turn of the promise queue
      // (and never in `running`: nothing can cancel it any more).
      this.ok(request, result);
      this.checkFinished();
      return;
    }
    this.running.set(request, ctx);
    Promise.resolve(result).then((value) => this.ok(request, value), (e) => this.failed(request, ctx, e))
      .finally(() => this.done(request));
  }

  done(request) {
    this.running.delete(request);
    this.checkFinished();
  }

  ok(request, value) {
    let data;
    try {
      data = asBuffer(value);
    } catch (e) {
      this.write(frame('F', request, blob(Buffer.from(e.message))));
      return;
    }
    this.write(okFrame(request, data));
  }

  failed(request, ctx, e) {
    const reason = Buffer.from(String(e && e.message !== undefined ? e.message : e), 'utf8');
    if (e instanceof Fail) {
      this.write(frame('F', request, blob(reason)));
      return;
    }
    if (!(e instanceof Retry)) {
      ctx.log(e && e.stack ? e.stack : String(e), 'warn');
      const text = Buffer.from(`${e && e.name ? e.name : 'Error'}: ${reason}`, 'utf8');
      this.retry(request, -1, text);
      return;
    }
    this.retry(request, e.delay === undefined || e.delay === null ? -1 : Math.max(0, Math.floor(e.delay)), reason);
  }

  retry(request, delay, reason) {
    const ms = Buffer.alloc(8);
    ms.writeBigInt64BE(BigInt(delay), 0);
    this.write(frame('Y', request, Buffer.concat([ms, blob(reason)])));
  }

  cancel(request) {
    const ctx = this.running.get(request);
    if (ctx) ctx.abort();
  }

  // stdin closed: the host stops this program; tasks in hand end first.
  end() {
    this.closing = true;
    this.checkFinished();
  }

  checkFinished() {
    if (this.closing && this.running.size === 0) {
      this.flush();
      process.exit(0);
    }
  }
}

// Writes all of buf to fd 1, which nothing but this file touches: stays
// blocking, so a write waits while the host's pipe is full.
function writeFrames(buf) {
  let at = 0;
  while (at < buf.length) at += fs.writeSync(1, buf, at, buf.length - at);
}

// process.stdout (console.log) is stderr from here on: stdout carries
// frames only, written straight to fd 1. Before the handlers' modules
// load, so a console.log at their top cannot reach the host as a frame.
function guardStdout() {
  Object.defineProperty(process, 'stdout', { get: () => process.stderr, configurable: true });
}

// Serves the registered handlers on stdin and stdout until stdin closes.
function run() {
  guardStdout();
  const runner = new Runner(handlers, writeFrames);
  process.stdin.on('data', (chunk) => runner.data(chunk));
  process.stdin.on('end', () => runner.end());
  process.stdin.on('error', () => runner.end());
}

function main(argv) {
  if (argv.length === 0 || argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write('usage: node handler.js MODULE [MODULE...]\n'
      + "requires each MODULE (its handler() calls register) and serves them to wharf's coprocess plugin on stdin/stdout\n");
    return 64;
  }
  guardStdout();
  for (const name of argv) require(path.resolve(name));
  if (handlers.size === 0) {
    process.stderr.write(`wharf handler: no handler() in ${argv.join(', ')}\n`);
    return 65;
  }
  run();
  return 0;
}

module.exports = { handler, run, Retry, Fail, Context, PROTOCOL_VERSION };

if (require.main === module) {
  const status = main(process.argv.slice(2));
  if (status !== 0) process.exit(status);
}
