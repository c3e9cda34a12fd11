'use strict';
// npm pack's prepack and postpack steps (package.json "scripts"). A
// tarball must hold what the client loads once installed, which lives
// outside this folder in the source tree: the Lua scripts it runs
// (sdk/lua's enqueue, status and cancel, copied into lua/, where
// scripts.js looks first) and the project's LICENSE. npm skips symbolic
// links, so they are copied in before the tarball is made and removed
// after (`node pack.js clean`), leaving the tree as it was.
const fs = require('fs');
const path = require('path');
const { NAMES } = require('./scripts');

const root = path.resolve(__dirname, '..', '..');
const lua = path.join(__dirname, 'lua');
const license = path.join(__dirname, 'LICENSE');

if (process.argv[2] === 'clean') {
  fs.rmSync(lua, { recursive: true, force: true });
  fs.rmSync(license, { force: true });
} else {
  fs.mkdirSync(lua, { recursive: true });
  for (const name of NAMES) {
    fs.copyFileSync(path.join(root, 'sdk', 'lua', `${name}.lua`), path.join(lua, `${name}.lua`));
  }
  fs.copyFileSync(path.join(root, 'LICENSE'), license);
}
