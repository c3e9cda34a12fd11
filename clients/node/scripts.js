'use strict';
// The Lua scripts, loaded from the same .lua files the C client, the CLI
// and the hosts are built from (sdk/lua in the source tree; the package's
// lua/ copy or share/wharf once installed), run with EVALSHA and loaded
// on NOSCRIPT. Each file's header states its keys, arguments and reply
// words (sdk/lua/README.md); parse reads it as the C build does, so the
// client builds every call from it.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const NAMES = ['enqueue', 'status', 'cancel', 'wf_register', 'wf_enqueue',
  'wf_notify', 'wf_group_create', 'wf_group_count'];

function candidates(explicit) {
  const out = [];
  if (explicit) out.push(explicit);
  if (process.env.WHARF_LUA_DIR) out.push(process.env.WHARF_LUA_DIR);
  // An installed tarball's own copy (lua/, put there by pack.js).
  out.push(path.join(__dirname, 'lua'));
  // clients/node/scripts.js -> the source tree's sdk/lua
  out.push(path.resolve(__dirname, '..', '..', 'sdk', 'lua'));
  for (const prefix of ['/usr/local', '/usr']) out.push(path.join(prefix, 'share', 'wharf'));
  return out;
}

function findDir(explicit) {
  const tried = candidates(explicit);
  for (const d of tried) {
    if (NAMES.every((n) => fs.existsSync(path.join(d, `${n}.lua`)))) return d;
  }
  throw new Error(`wharf: cannot find the Lua scripts (enqueue.lua, ...) in ${tried.join(', ')}; set WHARF_LUA_DIR`);
}

const KEY_TYPE = /^([a-z_]+)$/;
const KEY_TASK = /^([a-z_]+):<([a-z0-9_]+)>$/;
const KEY_NAMED = /^<([a-z_]+)>$/;
const ARG = /^[a-z][a-z0-9_]*$/;
const ARG_THEN = /^(<[a-z_]+>|[a-z][a-z0-9_]*)$/;
const WORD = /^[A-Za-z][A-Za-z_]*$/;

// One key: form 'type' (<prefix>:{<type>}:<what>), 'task' (...
// :<what>:<placeholder>), 'whole' (the caller's own key) or 'prose' (a
// "then <name>" key the header describes in words).
function readKey(token, numbered, where) {
  let m = KEY_TYPE.exec(token);
  if (m) return { what: m[1], form: 'type', placeholder: '' };
  m = KEY_TASK.exec(token);
  if (m) {
    if (numbered && m[2] !== 'id') throw new Error(`${where}: a numbered key of a task is <what>:<id>`);
    return { what: m[1], form: 'task', placeholder: m[2] };
  }
  m = KEY_NAMED.exec(token);
  if (m) return { what: m[1], form: numbered ? 'whole' : 'prose', placeholder: '' };
  throw new Error(`${where}: '${token}' is not a key: what, what:<id> or <name>`);
}

// What a script's header states, read as sdk/lua/embed.cmake reads it:
// {name, keys, thenKeys, eachKeys, args, thenArgs, words, argv(values),
// checkWords(words)}. Throws naming the line when the header breaks the
// form.
function parse(name, source) {
  const spec = {
    name, keys: [], thenKeys: [], eachKeys: [], args: [], thenArgs: [], words: [],
  };
  const order = { KEYS: '', ARGV: 'KEYS', Reply: 'ARGV' };
  let section = '';
  let number = 0;
  let tail = false;
  const lines = source.toString('utf8').split('\n');
  for (let n = 1; n <= lines.length; n++) {
    const line = lines[n - 1];
    const where = `${name}.lua:${n}`;
    if (!line.startsWith('--')) break;
    if (n === 1) {
      if (!line.startsWith(`-- ${name}: `)) throw new Error(`${where}: the first line is "-- ${name}: what it does"`);
      continue;
    }
    let m = /^-- (KEYS|ARGV|Reply):/.exec(line);
    if (m) {
      if (order[m[1]] !== section) throw new Error(`${where}: sections are KEYS:, ARGV:, Reply:, once each, in that order`);
      [section, number, tail] = [m[1], 0, false];
      continue;
    }
    if (line.startsWith('--    ') || section === '') continue;
    m = /^-- {3}(\S+) *(\S*)/.exec(line);
    if (!m) {
      if (section === 'Reply') break;
      throw new Error(`${where}: inside KEYS: and ARGV: a line is an item or continues one`);
    }
    const [, tag, token] = m;
    if (section === 'Reply') {
      if (!WORD.test(tag)) throw new Error(`${where}: a reply item starts with its word`);
      spec.words.push(tag);
    } else if (/^[0-9]+$/.test(tag)) {
      number += 1;
      if (Number(tag) !== number || tail) throw new Error(`${where}: numbered items count 1, 2, ... before any then or each`);
      if (section === 'KEYS') {
        spec.keys.push(readKey(token, true, where));
      } else {
        if (!ARG.test(token) || token === 'cmd' || token === 'prefix') throw new Error(`${where}: an argument is named by a C identifier`);
        if (spec.args.includes(token)) throw new Error(`${where}: argument '${token}' is named twice`);
        spec.args.push(token);
      }
    } else if (tag === 'then' || tag === 'each') {
      tail = true;
      if (!token) throw new Error(`${where}: '${tag}' is followed by a key or a name`);
      if (section === 'ARGV') {
        if (tag === 'each' || !ARG_THEN.test(token)) throw new Error(`${where}: an argument after the numbered ones is "then name"`);
        spec.thenArgs.push(token);
      } else {
        const k = readKey(token, false, where);
        if (tag === 'then') {
          spec.thenKeys.push(k.form === 'task' ? { ...k, placeholder: 'id' } : k);
        } else if (k.form !== 'task') {
          throw new Error(`${where}: an each key is what:<name>`);
        } else {
          spec.eachKeys.push(k);
        }
      }
    } else {
      throw new Error(`${where}: an item starts with its number, then or each`);
    }
  }
  if (section !== 'Reply') throw new Error(`${name}.lua: no KEYS:, ARGV: and Reply: sections`);
  // The numbered arguments in the header's order, from their names (a
  // missing or unknown name is a bug of the caller).
  spec.argv = (values) => {
    const given = Object.keys(values).sort();
    if (given.join() !== [...spec.args].sort().join()) {
      throw new Error(`${name}.lua takes ${spec.args.join(', ')}, not ${given.join(', ')}`);
    }
    return spec.args.map((a) => values[a]);
  };
  spec.checkWords = (words) => {
    const missing = words.filter((w) => !spec.words.includes(w));
    if (missing.length) throw new Error(`${name}.lua does not answer ${missing.join(', ')}: the scripts are not the ones this client was written for`);
  };
  return spec;
}

function load(explicit) {
  const d = findDir(explicit);
  const out = {};
  for (const n of NAMES) {
    const source = fs.readFileSync(path.join(d, `${n}.lua`));
    out[n] = {
      name: n, source, sha: crypto.createHash('sha1').update(source).digest('hex'), spec: parse(n, source),
    };
  }
  return out;
}

module.exports = { load, findDir, parse, NAMES };
