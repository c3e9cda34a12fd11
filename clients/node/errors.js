'use strict';
// The errors of the wharf client: one class per exit code of the wharf
// CLI, so a program and a shell script written against wharf agree on what
// went wrong. Every error carries exitCode.

class WharfError extends Error {
  constructor(message, extra) {
    super(message);
    this.name = this.constructor.name;
    Object.assign(this, extra || {});
  }
}
WharfError.prototype.exitCode = 70; // anything else

function kind(name, parent, exitCode) {
  const C = { [name]: class extends parent {} }[name];
  if (exitCode !== undefined) C.prototype.exitCode = exitCode;
  return C;
}

const NotFound = kind('NotFound', WharfError, 1);
const WaitTimeout = kind('WaitTimeout', NotFound);
const TaskDead = kind('TaskDead', WharfError, 2); // .error, .attempts
const TaskCancelled = kind('TaskCancelled', WharfError, 3);
const BadInput = kind('BadInput', WharfError, 65);
const TooLarge = kind('TooLarge', BadInput); // .limit
const UnservedType = kind('UnservedType', BadInput);
const Unavailable = kind('Unavailable', WharfError, 69);
const Backpressure = kind('Backpressure', WharfError, 75); // .limit
const RedisFull = kind('RedisFull', Backpressure);
const ProtocolMismatch = kind('ProtocolMismatch', WharfError, 76); // .hostProtocol
const ConfigError = kind('ConfigError', WharfError, 78);

module.exports = {
  WharfError, NotFound, WaitTimeout, TaskDead, TaskCancelled, BadInput,
  TooLarge, UnservedType, Unavailable, Backpressure, RedisFull,
  ProtocolMismatch, ConfigError,
};
