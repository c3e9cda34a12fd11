'use strict';
// The Lua scripts, loaded from the same .lua files the C client, the CLI
// and the hosts are built from (sdk/lua in the source tree, share/wharf
// once installed), run with EVALSHA and loaded on NOSCRIPT.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const NAMES = ['enqueue', 'status', 'cancel'];

function candidates(explicit) {
  const out = [];
  if (explicit) out.push(explicit);
  if (process.env.WHARF_LUA_DIR) out.push(process.env.WHARF_LUA_DIR);
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

function load(explicit) {
  const d = findDir(explicit);
  const out = {};
  for (const n of NAMES) {
    const source = fs.readFileSync(path.join(d, `${n}.lua`));
    out[n] = { name: n, source, sha: crypto.createHash('sha1').update(source).digest('hex') };
  }
  return out;
}

module.exports = { load, findDir };
