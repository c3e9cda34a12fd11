'use strict';
// The bench's no-op handler in Node (make bench, the handlers rows): it
// does nothing and succeeds, as bench/noop.c does.
const { handler } = require('../clients/node/handler');

handler('noop', () => undefined);
handler('noopn', () => undefined);
