'use strict';
// tests/handlers/pygate.py in Node: holds every task until GATE_CALLS of
// them are in flight at once, then answers them in the reverse of the
// order they came in, writing "in ID" and "out ID" lines to GATE_FILE.
// Type: nodegate.
const fs = require('fs');
const { handler } = require('../../clients/node/handler');

const CALLS = Number(process.env.GATE_CALLS || 64);
const LOG = process.env.GATE_FILE;
const arrived = [];
const release = [];

function note(line) {
  if (LOG) fs.appendFileSync(LOG, `${line}\n`);
}

handler('nodegate', (task) => {
  const index = arrived.length;
  arrived.push(task.id);
  note(`in ${task.id}`);
  const turn = new Promise((resolve) => { release[index] = resolve; });
  if (arrived.length === CALLS) release[CALLS - 1]();
  return turn.then(() => {
    note(`out ${task.id}`);
    if (index > 0) release[index - 1]();
    return `gate ${index}`;
  });
});
