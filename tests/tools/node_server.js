// A small Node.js HTTP service for the cost phase's end-to-end tests (a real
// runtime with a JIT): node node_server.js PORT ROUNDS. Each request runs
// ROUNDS rounds of an integer loop, so a test plants an exact regression.
'use strict';
const http = require('http');
const port = Number(process.argv[2]);
const rounds = Number(process.argv[3] || 0);
let sink = 0;
http
  .createServer((req, res) => {
    if (req.url !== '/health') {
      let x = 0;
      for (let i = 0; i < rounds; i++) x = (x * 31 + i) % 1000003;
      sink ^= x;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 3 });
    res.end('ok\n');
  })
  .listen(port, '127.0.0.1');
