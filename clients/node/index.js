'use strict';
// The wharf producer client for Node: enqueue, results, status and cancel,
// with the same scripts, keys and rules as the C client
// (docs/protocol.md). Every call returns a promise. Times are in ms.
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const path = require('path');
const Redis = require('ioredis');
const errors = require('./errors');
const scripts = require('./scripts');

// The wharf protocol versions this client speaks (docs/protocol.md).
const PROTOCOLS = ['1'];
const GROUP = 'wharf';
const DEFAULT_URL = 'redis://127.0.0.1:6379';
const DEFAULT_PREFIX = 'wharf';
// The policy used while no host has published one for a type.
const DEFAULT_POLICY = {
  max_payload: '1048576', max_backlog: '0', idempotency: 'payload', idempotency_ttl: '300000',
};
// The reply words this client reads, by script (each checked against the
// script's header when the scripts are loaded).
const WORDS = {
  enqueue: ['OK', 'DUPLICATE', 'TOO_LARGE', 'BACKPRESSURE', 'UNSERVED', 'PROTOCOL'],
  status: ['done', 'dead', 'cancelled', 'unknown', 'running', 'PROTOCOL'],
  cancel: ['REMOVED', 'CANCELLING', 'CANCELLED', 'FINISHED', 'UNKNOWN', 'PROTOCOL'],
};
// As the C client: tasks and payload bytes per script call, tasks per
// pipelined round trip, so every client costs Redis the same per task.
const CALL_TASKS = 100;
const CALL_BYTES = 1024 * 1024;
const ROUND_TASKS = 500;
const MAX_DELAY_MS = 100 * 365 * 24 * 3600 * 1000;
const POLL_FIRST_MS = 5;
const POLL_MAX_MS = 100;

const TYPE_RE = /^[A-Za-z0-9._-]{1,100}$/;
const ID_RE = /^[\x21-\x7e]{1,200}$/;
const PREFIX_RE = /^[\x21-\x7a\x7c\x7e]{1,100}$/; // no { or }
const TRACE_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function quote(text, n = 100) {
  const s = String(text).replace(/[^\x20-\x7e]/g, '?');
  return s.length < n ? s : `${s.slice(0, n - 4)}...`;
}

function toBuffer(payload) {
  if (Buffer.isBuffer(payload)) return payload;
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  throw new errors.BadInput('payload must be a Buffer or a string');
}

function checkType(type) {
  if (typeof type !== 'string' || !TYPE_RE.test(type)) {
    throw new errors.BadInput(`type '${quote(type ?? '')}' is not valid: use 1-100 of A-Z a-z 0-9 . _ -`);
  }
  return type;
}

function checkId(id) {
  if (typeof id !== 'string' || !ID_RE.test(id)) {
    throw new errors.BadInput(`task id '${quote(id ?? '')}' is not valid: use 1-200 printable ASCII characters, no spaces`);
  }
  return id;
}

function checkTrace(trace) {
  const m = typeof trace === 'string' && TRACE_RE.exec(trace);
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) {
    throw new errors.BadInput(`trace '${quote(trace ?? '')}' is not a W3C traceparent: expected 00-<32 hex>-<16 hex>-<2 hex>`);
  }
  return trace;
}

function checkMs(value, what) {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new errors.BadInput(`${what} must be a number of milliseconds`);
  }
  const ms = Math.round(value);
  if (ms < 0 || ms > MAX_DELAY_MS) {
    throw new errors.BadInput(`${what} of ${ms} ms is out of range: use 0 up to 100 years`);
  }
  return ms;
}

// The bounds of per-task options: the manifest's for timeout and
// max_attempts, the hosts' last readable time for an expiry.
const MAX_TIMEOUT_MS = 30 * 24 * 3600 * 1000;
const MAX_ATTEMPTS = 1000;
const MAX_TIME_MS = 253402300799999;

// A task's options (opts.timeout ms, opts.maxAttempts, opts.expireIn ms or
// opts.expires a Date) as enqueue.lua takes them ('' for none), checked
// (docs/protocol.md).
function checkOptions(opts) {
  const out = [];
  if (opts.timeout !== undefined && opts.timeout !== null) {
    const ms = checkMs(opts.timeout, 'timeout');
    if (ms < 1 || ms > MAX_TIMEOUT_MS) {
      throw new errors.BadInput(`timeout of ${ms} ms is out of range: use 1 ms up to 30 days`);
    }
    out.push('timeout_ms', String(ms));
  }
  if (opts.maxAttempts !== undefined && opts.maxAttempts !== null) {
    const n = opts.maxAttempts;
    if (!Number.isInteger(n) || n < 1 || n > MAX_ATTEMPTS) {
      throw new errors.BadInput(`maxAttempts ${n} is out of range: use 1 up to ${MAX_ATTEMPTS}`);
    }
    out.push('max_attempts', String(n));
  }
  const hasIn = opts.expireIn !== undefined && opts.expireIn !== null;
  const hasAt = opts.expires !== undefined && opts.expires !== null;
  if (hasIn && hasAt) throw new errors.BadInput('give expireIn or expires, not both');
  let at = null;
  if (hasIn) {
    const ms = checkMs(opts.expireIn, 'expireIn');
    if (ms < 1) throw new errors.BadInput('expireIn must be 1 ms or more');
    at = Date.now() + ms;
  }
  if (hasAt) {
    if (!(opts.expires instanceof Date) || Number.isNaN(opts.expires.getTime())) {
      throw new errors.BadInput('expires must be a Date');
    }
    at = opts.expires.getTime();
    if (at <= Date.now()) throw new errors.BadInput(`expires ${opts.expires.toISOString()} is in the past`);
  }
  if (at !== null) {
    if (at > MAX_TIME_MS) throw new errors.BadInput('the expiry is after the year 9999');
    out.push('expires_at', String(at));
  }
  return out.join(' ');
}

// A new W3C traceparent "00-<trace id>-<parent id>-01".
// Workflow members and children cannot carry per-task options yet:
// refused, not dropped.
function refuseOptions(opts, what) {
  for (const k of ['timeout', 'maxAttempts', 'expireIn', 'expires']) {
    if (opts[k] !== undefined && opts[k] !== null) {
      throw new errors.BadInput(`${what} takes no ${k}: per-task options go with enqueue`);
    }
  }
}

function newTrace() {
  const b = crypto.randomBytes(24);
  b[15] |= 1; // an all-zero id is invalid
  b[23] |= 1;
  return `00-${b.subarray(0, 16).toString('hex')}-${b.subarray(16).toString('hex')}-01`;
}

// The id of a task with no id given: hex SHA-256 of type "\n" payload.
function hashId(type, payload) {
  return crypto.createHash('sha256').update(checkType(type)).update('\n')
    .update(toBuffer(payload)).digest('hex');
}

// The wharf error for an ioredis error. lost: the connection's last error
// (ioredis reports a failed connect to the call only as "max retries per
// request"), said instead when there is one.
// link: {tls, ready} of the connection (ready: it answered once): TLS on
// one side only shows on a connection that never answered, as for the C
// client.
function errorOf(e, where, what, lost, link) {
  const text = String(e && e.message);
  if (e instanceof errors.WharfError) return e;
  if (link && !link.ready && !link.tls && lost && lost.code === 'ECONNRESET') {
    // A TLS port drops a plain client's first bytes at once, where a
    // plain Redis always answers, even an error.
    return new errors.ConfigError(`${what}: ${where}: ${lost.message} (is this a TLS port? use rediss://)`);
  }
  if (link && !link.ready && link.tls && !isTlsError(lost) &&
      (text === 'Command timed out' || (lost && lost.code === 'ETIMEDOUT'))) {
    // A plain Redis reads the ClientHello as the start of a command and
    // waits for its end.
    return new errors.ConfigError(`${what}: ${where}: TLS: no handshake answer within the timeout (is this port plain Redis? use redis://)`);
  }
  if (e && e.name === 'ReplyError') {
    if (text.startsWith('OOM')) return new errors.RedisFull(`${where}: Redis is out of memory (maxmemory reached)`);
    if (/^(NOAUTH|WRONGPASS)/.test(text)) return new errors.ConfigError(`${what}: ${where}: ${text}`);
    if (/^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|READONLY|CLUSTERDOWN)\b/.test(text)) {
      return new errors.Unavailable(`${what}: redis answered: ${text}`);
    }
    return new errors.WharfError(`${what}: redis answered: ${text}`);
  }
  if (isTlsError(lost) || isTlsError(e)) {
    const t = isTlsError(lost) ? lost : e;
    return new errors.ConfigError(`${what}: ${where}: TLS: ${t.message}`);
  }
  if (lost && lost.message) {
    return new errors.Unavailable(`${what}: ${where}: cannot reach Redis: ${lost.message}`);
  }
  return new errors.Unavailable(`${what}: ${where}: ${text}`);
}

// [{host, port}] of "h1:p1,h2,[::1]:p3", each port defaultPort unless
// given; null when a part is not an address.
function seedsOf(text, defaultPort) {
  const out = [];
  for (const part of text.split(',')) {
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::([0-9]{1,5}))?$/.exec(part);
    const port = m && m[3] ? Number(m[3]) : defaultPort;
    if (!m || port < 1 || port > 65535) return null;
    out.push({ host: m[1] || m[2], port });
  }
  return out;
}

// redis+cluster://[user:pw@]h1:p1,h2:p2[/0] and
// url for a message: quoted, with whatever could be a password (after the
// user name, up to the last '@') shown as ***, as the C core does.
function redact(url) {
  const text = String(url);
  const scheme = text.indexOf('://');
  const start = scheme >= 0 ? scheme + 3 : 0;
  const at = text.split('?')[0].lastIndexOf('@');
  if (at < start) return quote(text.replace(/([?&]sentinel_password=)[^&]*/g, '$1***'));
  const colon = text.indexOf(':', start);
  const keep = colon >= 0 && colon < at ? colon + 1 : start;
  return quote(`${text.slice(0, keep)}***${text.slice(at)}`.replace(/([?&]sentinel_password=)[^&]*/g, '$1***'));
}

// {url without the sentinels' credentials, ioredis's sentinelUsername
// and sentinelPassword} for a sentinel URL (the URL's own user and
// password are the master's).
function sentinelAuthOf(url) {
  const [base, query = ''] = url.split('?');
  const isSentinel = /^rediss?\+sentinel:\/\//.test(url);
  const auth = {};
  const rest = [];
  for (const part of query ? query.split('&') : []) {
    const m = /^(sentinel_user|sentinel_password)=(.*)$/.exec(part);
    if (!m) {
      rest.push(part);
      continue;
    }
    if (!isSentinel) throw new errors.ConfigError(`bad Redis URL '${redact(url)}': sentinel_user and sentinel_password are for redis+sentinel:// only`);
    const key = m[1] === 'sentinel_user' ? 'sentinelUsername' : 'sentinelPassword';
    if (key in auth) throw new errors.ConfigError(`bad Redis URL '${redact(url)}': ${m[1]} is given twice`);
    auth[key] = decodeURIComponent(m[2]);
  }
  return { url: rest.length ? `${base}?${rest.join('&')}` : base, auth };
}

// The TLS query parameters of a rediss URL, as the C client reads them.
const TLS_PARAMS = ['tls_ca', 'tls_cert', 'tls_key', 'tls_sni', 'tls_verify'];

// The CA certificates of tls_ca: a file, or every file of a folder (Node
// takes no folder; the C client's is one of hashed names).
function readCa(ca, url) {
  try {
    if (!fs.statSync(ca).isDirectory()) return [fs.readFileSync(ca)];
    return fs.readdirSync(ca).sort().map((f) => path.join(ca, f))
      .filter((f) => fs.statSync(f).isFile()).map((f) => fs.readFileSync(f));
  } catch (e) {
    throw new errors.ConfigError(`bad Redis URL '${redact(url)}': cannot read tls_ca '${quote(ca)}': ${e.code || e.message}`);
  }
}

// {url: url without its TLS query and with redis in place of rediss, tls:
// the options of tls.connect} for a rediss URL (rediss://,
// rediss+cluster://, rediss+sentinel://); {url, tls: null} for another.
// The certificate and the name are checked unless tls_verify=no.
function tlsOf(url, host) {
  const m = /^rediss(\+cluster|\+sentinel)?:\/\/([^?]*)(?:\?(.*))?$/.exec(url);
  if (!m) {
    if (!url.startsWith('unix://') && TLS_PARAMS.some((p) => url.includes(`?${p}=`) || url.includes(`&${p}=`))) {
      throw new errors.ConfigError(`bad Redis URL '${redact(url)}': query parameters (tls_ca, ...) need rediss://, a TLS address`);
    }
    return { url, tls: null };
  }
  const opts = {};
  for (const part of m[3] ? m[3].split('&') : []) {
    const eq = part.indexOf('=');
    const name = eq >= 0 ? part.slice(0, eq) : part;
    if (eq < 0 || !TLS_PARAMS.includes(name)) {
      throw new errors.ConfigError(`bad Redis URL '${redact(url)}': unknown query parameter '${quote(name)}' (known: ${TLS_PARAMS.join(', ')})`);
    }
    if (name in opts) throw new errors.ConfigError(`bad Redis URL '${redact(url)}': ${name} is given twice`);
    opts[name] = decodeURIComponent(part.slice(eq + 1));
  }
  const verifyWord = opts.tls_verify ?? 'yes';
  if (!['yes', 'no', 'true', 'false', '1', '0'].includes(verifyWord)) {
    throw new errors.ConfigError(`bad Redis URL '${redact(url)}': tls_verify: expected yes or no`);
  }
  if (opts.tls_key && !opts.tls_cert) throw new errors.ConfigError(`bad Redis URL '${redact(url)}': tls_key needs tls_cert`);
  const tls = { rejectUnauthorized: ['yes', 'true', '1'].includes(verifyWord) };
  if (opts.tls_ca) tls.ca = readCa(opts.tls_ca, url);
  for (const [name, key] of [['tls_cert', 'cert'], ['tls_key', 'key']]) {
    if (!opts[name]) continue;
    try {
      tls[key] = fs.readFileSync(opts[name]);
    } catch (e) {
      throw new errors.ConfigError(`bad Redis URL '${redact(url)}': cannot read ${name} '${quote(opts[name])}': ${e.code || e.message}`);
    }
  }
  if (tls.cert && !tls.key) tls.key = tls.cert;
  // SNI carries names only; the certificate is checked against the name
  // (or the address).
  const name = opts.tls_sni || host;
  if (name && !net.isIP(name)) tls.servername = name;
  if (opts.tls_sni) {
    tls.checkServerIdentity = (h, cert) => require('tls').checkServerIdentity(opts.tls_sni, cert);
  }
  return { url: `redis${m[1] || ''}://${m[2]}`, tls };
}

// True if e is a failed TLS handshake: a certificate not trusted, expired
// or for another name, a client certificate refused.
function isTlsError(e) {
  return Boolean(e && ((e.code && /CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO/.test(e.code)) || e.library === 'SSL routines'));
}

// redis+sentinel://[user:pw@]s1:p1,s2:p2/MASTER[/db], as the C client
// reads them: {kind, seeds, username, password, name, db}, or null for
// another scheme. Throws ConfigError on a malformed one.
function parseDistributed(url) {
  const m = /^redis\+(cluster|sentinel):\/\/(.*)$/.exec(url);
  if (!m) return null;
  const kind = m[1];
  let rest = m[2];
  let username;
  let password;
  const head = rest.split('/')[0];
  const at = head.lastIndexOf('@');
  if (at >= 0) {
    const auth = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = auth.indexOf(':');
    if (colon >= 0) {
      username = decodeURIComponent(auth.slice(0, colon)) || undefined;
      password = decodeURIComponent(auth.slice(colon + 1)) || undefined;
    } else {
      password = decodeURIComponent(auth) || undefined;
    }
  }
  const slash = rest.indexOf('/');
  const hosts = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : '';
  const seeds = seedsOf(hosts, kind === 'cluster' ? 6379 : 26379);
  if (!seeds) throw new errors.ConfigError(`bad Redis URL '${redact(url)}': expected host:port[,host:port...]`);
  if (kind === 'cluster') {
    if (path !== '' && path !== '0') throw new errors.ConfigError(`bad Redis URL '${redact(url)}': a Redis Cluster has database 0 only`);
    return { kind, seeds, username, password };
  }
  const [name, db = '0', ...more] = path.split('/');
  if (!/^[A-Za-z0-9._-]+$/.test(name) || !/^[0-9]+$/.test(db) || more.length) {
    throw new errors.ConfigError(`bad Redis URL '${redact(url)}': expected redis+sentinel://host:port[,host:port...]/MASTER[/db]`);
  }
  return { kind, seeds, username, password, name, db: Number(db) };
}

const str = (b) => (Buffer.isBuffer(b) ? b.toString('utf8') : String(b));

class Client {
  // url: redis://[user:password@]host[:port][/db], unix:///path[?db=N],
  // a Redis Cluster redis+cluster://host:port[,host:port...] (ioredis
  // follows MOVED and ASK; every key of a type is in one slot) or a master
  // Redis Sentinel watches, redis+sentinel://host:port[,...]/MASTER[/db].
  // options: prefix, password, strict (refuse a type no host has ever
  // served, else only warn), timeout (ms), luaDir.
  constructor(url = DEFAULT_URL, options = {}) {
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    if (!PREFIX_RE.test(this.prefix)) {
      throw new errors.BadInput(`key prefix '${quote(this.prefix)}' is not valid: use 1-100 printable ASCII characters, no spaces or braces`);
    }
    this.strict = Boolean(options.strict);
    this._url = url;
    this._options = options;
    this._where = String(url).split('?')[0].replace(/\/\/[^@/]*@/, '//');
    this._scripts = scripts.load(options.luaDir);
    try {
      for (const [name, words] of Object.entries(WORDS)) this._scripts[name].spec.checkWords(words);
    } catch (e) {
      throw new errors.ConfigError(`wharf: ${e.message}`);
    }
    this._typesAdded = new Set();
    this._warned = new Set();
    this._redis = null;
    this._loaded = false;
  }

  // Closes the connection.
  async close() {
    if (this._redis) this._redis.disconnect();
    this._redis = null;
  }

  _connect() {
    if (this._redis && this._redis.status !== 'end') return this._redis;
    const timeout = this._options.timeout ?? 5000;
    let opts = {
      lazyConnect: false,
      connectTimeout: timeout,
      commandTimeout: timeout,
      maxRetriesPerRequest: 1,
      // A broken connection is made again by the next call, not retried
      // for ever behind the caller's back.
      retryStrategy: (times) => (times > 2 ? null : 50),
    };
    if (this._options.password) opts.password = this._options.password;
    let r;
    const hostOf = /^[a-z+]+:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/,?]*)/.exec(String(this._url));
    const { url: bare, auth: sentinelAuth } = sentinelAuthOf(String(this._url));
    const { url, tls } = tlsOf(bare, hostOf ? hostOf[1].replace(/^\[|\]$/g, '') : '');
    if (tls) opts.tls = tls;
    const dist = parseDistributed(url);
    if (dist) {
      const auth = {};
      if (dist.username) auth.username = dist.username;
      if (dist.password) auth.password = dist.password;
      if (this._options.password) auth.password = this._options.password;
      if (dist.kind === 'cluster') {
        r = new Redis.Cluster(dist.seeds, {
          redisOptions: { ...opts, ...auth },
          clusterRetryStrategy: (times) => (times > 2 ? null : 50),
        });
      } else {
        r = new Redis({
          ...opts,
          ...auth,
          sentinels: dist.seeds,
          name: dist.name,
          db: dist.db,
          ...sentinelAuth,
          ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
        });
      }
    } else if (url.startsWith('unix://')) {
      const u = new URL(url);
      opts = { ...opts, path: decodeURIComponent(u.pathname), db: Number(u.searchParams.get('db') || 0) };
      r = new Redis(opts);
    } else if (/^rediss?:\/\//.test(url)) {
      try {
        r = new Redis(url, opts);
      } catch (e) {
        // ioredis's own parse ("Invalid URL"): the URL shown without its
        // password.
        throw new errors.ConfigError(`bad Redis URL '${redact(url)}': ${e.message}`);
      }
    } else {
      throw new errors.ConfigError(`bad Redis URL '${redact(url)}': use redis://, unix://, redis+cluster:// or redis+sentinel:// (rediss for TLS)`);
    }
    // Every call reports its own failure; this one is kept to say why.
    this._lost = null;
    this._link = { tls: Boolean(tls), ready: false };
    r.on('error', (e) => { this._lost = e; });
    r.on('ready', () => { this._lost = null; this._link.ready = true; });
    this._redis = r;
    this._loaded = false;
    return r;
  }

  // The connection that serves type's keys (all of a type's keys share
  // one hash tag, {type}): on a Redis Cluster ioredis's cluster client,
  // which sends each command (and a pipeline of one type) to its slot's
  // node.
  _redisFor(type) { // eslint-disable-line no-unused-vars
    return this._connect();
  }

  // The connection for keys of no type (<prefix>:types).
  _redisGlobal() {
    return this._connect();
  }

  _key(type, what, id) {
    const key = `${this.prefix}:{${type}}:${what}`;
    return id === undefined ? key : `${key}:${id}`;
  }

  // The numbered keys of script name, as its header states them, for
  // type (and task id).
  _keys(name, type, id) {
    return this._scripts[name].spec.keys.map((k) => this._key(type, k.what, k.form === 'task' ? id : undefined));
  }

  // EVALSHA of script name; on NOSCRIPT, SCRIPT LOAD and again.
  async _call(type, name, keys, args) {
    const r = this._redisFor(type);
    const s = this._scripts[name];
    try {
      try {
        return await r.evalshaBuffer(s.sha, keys.length, ...keys, ...args);
      } catch (e) {
        if (!String(e.message).startsWith('NOSCRIPT')) throw e;
        // EVAL runs it and leaves it cached on the node that ran it (on a
        // cluster, the one owning the keys' slot).
        return await r.evalBuffer(s.source, keys.length, ...keys, ...args);
      }
    } catch (e) {
      throw errorOf(e, this._where, name, this._lost, this._link);
    }
  }

  _protocolError(type, host) {
    return new errors.ProtocolMismatch(
      `the hosts serving '${type}' speak wharf protocol ${host}; this client speaks ${PROTOCOLS.join(',')}: upgrade it`,
      { hostProtocol: String(host) },
    );
  }

  // ---- enqueue ----

  _task(type, payload, opts = {}) {
    return {
      type: checkType(type),
      payload: toBuffer(payload ?? ''),
      id: opts.id !== undefined && opts.id !== null ? checkId(opts.id) : null,
      trace: opts.trace !== undefined && opts.trace !== null ? checkTrace(opts.trace) : newTrace(),
      delayMs: checkMs(opts.delay, 'delay'),
      options: opts.withOptions ? checkOptions(opts) : '',
    };
  }

  // KEYS and ARGV of one enqueue.lua call (sdk/lua/enqueue.lua).
  _build(tasks) {
    const t0 = tasks[0];
    const delayed = t0.delayMs > 0;
    const { spec } = this._scripts.enqueue;
    const keys = this._keys('enqueue', t0.type);
    for (const t of tasks) {
      let id1; let id2;
      if (t.id !== null) {
        id1 = t.id; id2 = t.id;
      } else {
        id1 = crypto.createHash('sha256').update(t.type).update('\n').update(t.payload).digest('hex');
        id2 = crypto.randomBytes(16).toString('hex');
      }
      const ids = { id1, id2 };
      for (const k of spec.eachKeys) keys.push(this._key(t.type, k.what, ids[k.placeholder]));
    }
    const skip = Buffer.byteLength(this._key(t0.type, 'seen:'));
    const args = spec.argv({
      type: t0.type,
      id_offset: String(skip),
      delayed: delayed ? '1' : '0',
      ...DEFAULT_POLICY,
      protocols: PROTOCOLS.join(','),
      strict: this.strict ? '1' : '0',
      options: t0.options,
    });
    for (const t of tasks) {
      args.push(t.payload, t.trace);
      if (delayed) args.push(String(t.delayMs));
    }
    return [keys, args];
  }

  // Each task's result, or the error it was refused with.
  async _parse(tasks, reply) {
    if (!Array.isArray(reply) || reply.length !== 1 + 3 * tasks.length) {
      throw new errors.WharfError('enqueue: the enqueue script gave an unexpected reply');
    }
    const flags = Number(reply[0]);
    const out = [];
    for (let i = 0; i < tasks.length; i++) {
      const t = tasks[i];
      const word = str(reply[1 + 3 * i]);
      const id = str(reply[2 + 3 * i]);
      const limit = Number(reply[3 + 3 * i]);
      if (word === 'OK' || word === 'DUPLICATE') {
        out.push({ id, duplicate: word === 'DUPLICATE', pressure: Boolean(flags & 1), unserved: Boolean(flags & 2) });
      } else if (word === 'TOO_LARGE') {
        out.push(new errors.TooLarge(`payload of ${t.payload.length} bytes is over max_payload ${limit} of type '${t.type}'`, { limit }));
      } else if (word === 'BACKPRESSURE') {
        out.push(new errors.Backpressure(`type '${t.type}' is at its backlog limit (max_backlog ${limit}): try later`, { limit }));
      } else if (word === 'UNSERVED') {
        out.push(new errors.UnservedType(`${await this._unservedMessage(t.type)}; refused (strict)`));
      } else if (word === 'PROTOCOL') {
        out.push(this._protocolError(t.type, limit));
      } else {
        out.push(new errors.WharfError(`enqueue: the enqueue script answered '${word.slice(0, 40)}'`));
      }
    }
    return out;
  }

  // "no host serves 'T'; served types: a, b" (as the CLI says it).
  async _unservedMessage(type) {
    let served = [];
    try {
      const names = (await this._redisGlobal().smembers(`${this.prefix}:types`)).sort();
      for (const n of names) {
        if (await this._redisFor(n).exists(this._key(n, 'policy'))) served.push(n);
      }
    } catch (e) {
      served = [];
    }
    return served.length
      ? `no host serves '${type}'; served types: ${served.join(', ')}`
      : `no host serves '${type}'; no host serves any type yet`;
  }

  // Adds to <prefix>:types, once per type per client, the types of tasks
  // that were added; warns once per type no host serves.
  async _after(tasks, results) {
    const fresh = [];
    for (let i = 0; i < tasks.length; i++) {
      const t = tasks[i];
      const r = results[i];
      if (r instanceof Error) continue;
      if (!r.duplicate && !this._typesAdded.has(t.type) && !fresh.includes(t.type)) fresh.push(t.type);
      if (r.unserved && !this._warned.has(t.type)) {
        this._warned.add(t.type);
        process.emitWarning(await this._unservedMessage(t.type), 'UnservedTypeWarning');
      }
    }
    if (!fresh.length) return;
    try {
      const p = this._redisGlobal().pipeline();
      for (const type of fresh) p.sadd(`${this.prefix}:types`, type);
      for (const [err] of await p.exec()) if (err) throw err;
    } catch (e) {
      throw errorOf(e, this._where, 'enqueue: adding the type', this._lost, this._link);
    }
    for (const type of fresh) this._typesAdded.add(type);
  }

  // Enqueues one task with one atomic script in Redis. Resolves to
  // {id, duplicate, pressure, unserved}. opts: id (the idempotency key),
  // delay (ms), trace (a W3C traceparent), wait (ms to keep trying while
  // the type refuses tasks with backpressure or Redis is full), and the
  // task's own options, which a retry keeps: timeout (ms, 1 ms to 30 days;
  // a run gets the shorter of it and the type's), maxAttempts (1 to 1000),
  // expireIn (ms) or expires (a Date): an attempt not begun by then does
  // not run, and the task is dead with "expired".
  async enqueue(type, payload = '', opts = {}) {
    const task = this._task(type, payload, { ...opts, withOptions: true });
    const deadline = Date.now() + checkMs(opts.wait, 'wait');
    let step = 0;
    let result;
    for (;;) {
      const [keys, args] = this._build([task]);
      [result] = await this._parse([task], await this._call(type, 'enqueue', keys, args));
      if (!(result instanceof errors.Backpressure)) break;
      const left = deadline - Date.now();
      if (left <= 0) break;
      step = Math.min(1000, step ? step * 2 : 10);
      await sleep(Math.min(step, left));
    }
    if (result instanceof Error) throw result;
    await this._after([task], [result]);
    return result;
  }

  // Enqueues many tasks of one type, pipelined: one script call per run of
  // up to 100 tasks (1 MiB of payloads), one round trip per 500 tasks,
  // each judged exactly as if enqueued alone. Resolves to one entry per
  // payload: its result, or the error it was refused with (not thrown).
  // Rejects only when the batch as a whole failed (some tasks may have
  // been added: enqueueing them again is safe).
  async enqueueMany(type, payloads, opts = {}) {
    // The per-task options are enqueue's, the same for every task.
    const options = checkOptions(opts);
    const tasks = Array.from(payloads, (p) => ({ ...this._task(type, p, { delay: opts.delay }), options }));
    const results = [];
    const r = this._redisFor(type);
    const s = this._scripts.enqueue;
    try {
      if (!this._loaded) {
        if (r instanceof Redis.Cluster) {
          await Promise.all(r.nodes('master').map((n) => n.script('LOAD', s.source)));
        } else {
          await r.script('LOAD', s.source);
        }
        this._loaded = true;
      }
      for (let start = 0; start < tasks.length; start += ROUND_TASKS) {
        const round = tasks.slice(start, start + ROUND_TASKS);
        const calls = [];
        let call = [];
        let size = 0;
        for (const t of round) {
          if (call.length && (call.length === CALL_TASKS || size + t.payload.length > CALL_BYTES)) {
            calls.push(call);
            call = [];
            size = 0;
          }
          call.push(t);
          size += t.payload.length;
        }
        calls.push(call);
        const p = r.pipeline();
        for (const c of calls) {
          const [keys, args] = this._build(c);
          p.evalshaBuffer(s.sha, keys.length, ...keys, ...args);
        }
        const replies = await p.exec();
        for (let i = 0; i < calls.length; i++) {
          let [err, reply] = replies[i];
          if (err && String(err.message).startsWith('NOSCRIPT')) {
            const [keys, args] = this._build(calls[i]);
            reply = await this._call(type, 'enqueue', keys, args);
          } else if (err) {
            throw err;
          }
          results.push(...await this._parse(calls[i], reply));
        }
      }
    } catch (e) {
      throw errorOf(e, this._where, 'enqueue', this._lost, this._link);
    }
    await this._after(tasks, results);
    return results;
  }

  // ---- status, results, cancel ----

  async _statusReply(type, id, withResult) {
    checkType(type);
    checkId(id);
    const reply = await this._call(type, 'status', this._keys('status', type, id),
      this._scripts.status.spec.argv({
        id, group: GROUP, protocols: PROTOCOLS.join(','), with_result: withResult ? 'result' : '',
      }));
    if (!Array.isArray(reply) || !reply.length) {
      throw new errors.WharfError('status: the status script gave an unexpected reply');
    }
    const f = { state: str(reply[0]) };
    for (let i = 1; i + 1 < reply.length; i += 2) f[str(reply[i])] = reply[i + 1];
    if (f.state === 'PROTOCOL') throw this._protocolError(type, str(f.protocol ?? '?'));
    return f;
  }

  // Where task id of type is now, in one script call. Resolves to
  // {state, nowMs, ...} (see index.d.ts for the fields of each state).
  async status(type, id) {
    const f = await this._statusReply(type, id, false);
    const num = (name) => (f[name] !== undefined && str(f[name]) !== '' ? Number(str(f[name])) : undefined);
    const text = (name) => (f[name] !== undefined ? str(f[name]) : undefined);
    const out = { state: f.state, nowMs: num('now') };
    const set = (name, value) => { if (value !== undefined) out[name] = value; };
    set('entry', text('entry'));
    set('attempt', num(f.state === 'dead' ? 'attempts' : 'attempt'));
    set('enqueuedAtMs', num('enqueued_at'));
    set('worker', text('worker'));
    if (f.state === 'running') {
      out.sinceMs = num('since') ?? 0;
      out.cancelRequested = text('cancel_requested') === '1';
    }
    set('dueAtMs', num('due_at'));
    set('diedAtMs', num('died_at'));
    set('error', text('error'));
    set('resultBytes', num('result_bytes'));
    set('expiresInMs', num('expires_in_ms'));
    if (f.state === 'held') set('waitsFor', text('waits_for'));
    set('timeoutMs', num('timeout_ms'));
    set('maxAttempts', num('max_attempts'));
    set('expiresAtMs', num('expires_at'));
    return out;
  }

  // The result bytes (a Buffer) of a finished task. Without opts.wait,
  // NotFound when there is none (yet); with it (ms), polls up to that
  // long, then WaitTimeout. TaskDead or TaskCancelled at once when no
  // result will ever come.
  async result(type, id, opts = {}) {
    const waitMs = checkMs(opts.wait, 'wait');
    const deadline = Date.now() + waitMs;
    let step = POLL_FIRST_MS;
    for (;;) {
      const f = await this._statusReply(type, id, true);
      if (f.state === 'done' && f.result !== undefined) return f.result;
      if (f.state === 'dead') {
        const error = str(f.error ?? '');
        const attempts = Number(str(f.attempts ?? '0'));
        throw new errors.TaskDead(`task '${id}' of type '${type}' is dead after ${attempts} attempts: ${error}`, { error, attempts });
      }
      if (f.state === 'cancelled') throw new errors.TaskCancelled(`task '${id}' of type '${type}' was cancelled`);
      const left = deadline - Date.now();
      if (opts.wait === undefined || opts.wait === null) {
        const suffix = f.state === 'unknown' ? '' : ` yet (it is ${f.state})`;
        throw new errors.NotFound(`no result for task '${id}' of type '${type}'${suffix}`);
      }
      if (left <= 0) throw new errors.WaitTimeout(`no result for task '${id}' of type '${type}' after ${waitMs} ms`);
      await sleep(Math.min(step, left));
      step = Math.min(step * 2, POLL_MAX_MS);
    }
  }

  // ---- workflows (docs/protocol.md, "Workflows") ----

  async _wf(type, name, id, args) {
    return this._call(type, name, this._keys(name, type, id), args);
  }

  async _notify(type, id, sender, state, result) {
    const spec = this._scripts.wf_notify.spec;
    await this._wf(type, 'wf_notify', id,
      [...spec.argv({ id, sender, state, dead_ttl_ms: '604800000' }), result]);
  }

  // Enqueues a task held until every parent of opts.after (["type:id",
  // ...] or [[type, id], ...]) has finished; it becomes runnable at once
  // then. opts.onParentDead is "dead" (a dead parent makes it dead,
  // "parent T:id is dead", the default) or "run"; opts.id defaults to a
  // random one. BadInput for a parent that is not queued, running,
  // delayed, held, done (result cached) or dead, for the task among its
  // own parents, or for no parents.
  async enqueueAfter(type, payload = '', opts = {}) {
    checkType(type);
    refuseOptions(opts, 'enqueueAfter');
    const raw = toBuffer(payload ?? '');
    const id = opts.id !== undefined && opts.id !== null ? checkId(opts.id)
      : crypto.randomBytes(16).toString('hex');
    const trace = opts.trace ? checkTrace(opts.trace) : newTrace();
    const onParentDead = opts.onParentDead ?? 'dead';
    if (onParentDead !== 'dead' && onParentDead !== 'run') {
      throw new errors.BadInput('onParentDead is dead or run');
    }
    const parents = (opts.after ?? []).map((p) => {
      if (Array.isArray(p)) return p;
      const at = String(p).indexOf(':');
      return at > 0 ? [p.slice(0, at), p.slice(at + 1)] : [p];
    });
    if (parents.length === 0) throw new errors.BadInput('a task enqueued after others needs a parent');
    for (const p of parents) {
      if (p.length !== 2) throw new errors.BadInput(`parent '${p}' is not type:id`);
      checkType(p[0]);
      checkId(p[1]);
      if (p[1].includes(',')) throw new errors.BadInput(`parent id '${p[1]}' holds a ','`);
      if (p[0] === type && p[1] === id) throw new errors.BadInput(`task ${type}:${id} cannot be its own parent`);
    }
    const answers = [];
    for (const [ptype, pid] of parents) {
      const r = await this._wf(ptype, 'wf_register', pid,
        this._scripts.wf_register.spec.argv({ id: pid, child: `child ${type} ${id}` }));
      if (str(r[0]) === 'UNKNOWN') {
        throw new errors.BadInput(`parent ${ptype}:${pid} is unknown (not queued, running, delayed, held, done with its result cached, or dead)`);
      }
      answers.push(r);
    }
    const r = await this._wf(type, 'wf_enqueue', id, [...this._scripts.wf_enqueue.spec.argv({
      type, id, trace, protocols: PROTOCOLS.join(','), mode: 'held', dependent: '',
      parents: parents.map(([t, i]) => `${t}:${i}`).join(','),
      on_parent_dead: onParentDead, max_payload: '1048576', idempotency_ttl: '300000',
    }), raw]);
    const word = str(r[0]);
    if (word === 'DUPLICATE') return { id, duplicate: true, pressure: false, unserved: false };
    if (word === 'PROTOCOL') throw this._protocolError(type, str(r[1]));
    if (word === 'TOO_LARGE') throw new errors.TooLarge(`payload too large for type '${type}'`, { limit: Number(r[1]) });
    if (word !== 'HELD') throw new errors.WharfError(`wf_enqueue answered '${word.slice(0, 40)}'`);
    for (let i = 0; i < parents.length; i++) {
      const w = str(answers[i][0]);
      if (w === 'DONE' || w === 'DEAD') {
        await this._notify(type, id, parents[i].join(':'), w === 'DONE' ? 'o' : 'd',
          answers[i][1] ?? Buffer.alloc(0));
      }
    }
    await this._notify(type, id, '', 'check', Buffer.alloc(0));
    return { id, duplicate: false, pressure: false, unserved: false };
  }

  // Makes group `group` and enqueues one member of `type` per payload
  // (ids opts.ids, or "<group>:<n>" from 1); when the last member ends,
  // ok or dead, a host enqueues the callback of type opts.then, once,
  // with id "group:<group>" and a JSON payload {group, ok, dead, members,
  // payload: opts.thenPayload}. Resolves to the member ids; safe to call
  // again after a failure.
  async enqueueGroup(group, type, payloads, opts = {}) {
    checkType(group);
    checkType(type);
    checkType(opts.then);
    refuseOptions(opts, 'enqueueGroup');
    const raws = [...payloads].map((p) => toBuffer(p ?? ''));
    if (raws.length === 0) throw new errors.BadInput(`group '${group}' has no members: nothing would ever end it`);
    const ids = opts.ids ? [...opts.ids] : raws.map((_, n) => `${group}:${n + 1}`);
    if (ids.length !== raws.length) throw new errors.BadInput('as many ids as payloads');
    ids.forEach(checkId);
    const c = await this._wf(group, 'wf_group_create', undefined, [
      ...this._scripts.wf_group_create.spec.argv({
        n: String(raws.length), callback_type: opts.then, payload: opts.thenPayload ?? '',
      }),
      ...ids.map((i) => `${type}:${i}`)]);
    if (str(c[0]) === 'CONFLICT') throw new errors.BadInput(`group '${group}' exists with other members or another callback`);
    const spec = this._scripts.wf_enqueue.spec;
    for (let k = 0; k < ids.length; k++) {
      const r = await this._wf(type, 'wf_enqueue', ids[k], [...spec.argv({
        type, id: ids[k], trace: newTrace(), protocols: PROTOCOLS.join(','), mode: 'member',
        dependent: `group ${group}`, parents: '', on_parent_dead: '',
        max_payload: '1048576', idempotency_ttl: '300000',
      }), raws[k]]);
      const w = str(r[0]);
      if (w === 'TOO_LARGE' || w === 'PROTOCOL') {
        throw new errors.TooLarge(`group member ${type}:${ids[k]} was refused (${w})`, { limit: Number(r[1]) });
      }
    }
    return ids;
  }

  // A group's state: {n, ok, dead, pending, callbackType, callback:
  // "waiting" | "due" | "enqueued" | "cancelled"}. NotFound when there
  // is no such group.
  async group(group) {
    checkType(group);
    const r = this._redisFor(group);
    let g;
    let done;
    try {
      g = await r.hgetall(this._key(group, 'group'));
      done = await r.hgetall(this._key(group, 'group_done'));
    } catch (e) {
      throw errorOf(e, this._where, 'group', this._lost);
    }
    if (!g || Object.keys(g).length === 0) throw new errors.NotFound(`no group '${group}'`);
    const ok = Object.values(done).filter((v) => v === 'o').length;
    const n = Number(g.n);
    const ended = Object.keys(done).length;
    return {
      n, ok, dead: ended - ok, pending: n - ended, callbackType: g.type,
      callback: 'cancelled' in g ? 'cancelled' : 'enqueued' in g ? 'enqueued' : 'fired' in g ? 'due' : 'waiting',
    };
  }

  // Cancels a task in one atomic script call. Resolves to {outcome,
  // detail}: "removed" (it was waiting: detail "queued" or "delayed"),
  // "cancelling" (a worker holds it: detail is that consumer; its run is
  // asked to end and writes no result) or "already". NotFound when it has
  // finished (done or dead) or is unknown.
  async cancel(type, id) {
    checkType(type);
    checkId(id);
    const reply = await this._call(type, 'cancel', this._keys('cancel', type, id),
      this._scripts.cancel.spec.argv({ id, group: GROUP, protocols: PROTOCOLS.join(',') }));
    if (!Array.isArray(reply) || reply.length !== 2) {
      throw new errors.WharfError('cancel: the cancel script gave an unexpected reply');
    }
    const word = str(reply[0]);
    const detail = str(reply[1]);
    if (word === 'PROTOCOL') throw this._protocolError(type, detail);
    if (word === 'REMOVED') return { outcome: 'removed', detail };
    if (word === 'CANCELLING') return { outcome: 'cancelling', detail };
    if (word === 'CANCELLED') return { outcome: 'already', detail: '' };
    if (word === 'FINISHED') throw new errors.NotFound(`task '${id}' of type '${type}' has finished (${detail}): nothing to cancel`);
    if (word === 'UNKNOWN') throw new errors.NotFound(`no task '${id}' of type '${type}' to cancel`);
    throw new errors.WharfError(`cancel: the cancel script answered '${word.slice(0, 40)}'`);
  }
}

module.exports = { Client, PROTOCOLS, hashId, newTrace, ...errors };
