'use strict';
// make bench: bulk enqueue rate through the Node client, in chunks of
// 1000 payloads as wharf-bench does for the C client.
//   enqueue.js PORT TYPE N   prints tasks, seconds and rate.
const path = require('path');
const wharf = require(path.join(__dirname, '..', 'clients', 'node'));

const CHUNK = 1000;

async function main(port, type, n) {
  const c = new wharf.Client(`redis://127.0.0.1:${port}/0`);
  const tag = process.hrtime.bigint();
  const start = process.hrtime.bigint();
  for (let done = 0; done < n; done += CHUNK) {
    const payloads = [];
    for (let i = done; i < Math.min(n, done + CHUNK); i++) payloads.push(`${tag}-${i}`);
    for (const r of await c.enqueueMany(type, payloads)) if (r instanceof Error) throw r;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  process.stdout.write(`tasks ${n}\nseconds ${seconds.toFixed(6)}\nrate ${(n / seconds).toFixed(0)}\n`);
  await c.close();
}

main(process.argv[2], process.argv[3], Number(process.argv[4])).catch((e) => {
  process.stderr.write(`bench: ${e.message}\n`);
  process.exit(1);
});
