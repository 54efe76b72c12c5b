// A workload of your own, as small as one can be: Node's standard library only. A cell's load
// balancer checks HEALTH_CHECK_PATH (/healthz); every other path answers with the tenant (the
// fleet's partition key header, x-tenant-id by default) and the cell that served it, which is
// what the cell stack's environment tells the container (docs/workload.md, "Environment").
const http = require('http');

const port = Number(process.env.PORT ?? 8080);
const healthPath = process.env.HEALTH_CHECK_PATH ?? '/healthz';
const cell = process.env.CELL_ID ?? 'unknown';
const keyHeader = 'x-tenant-id';

const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === healthPath) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok\n');
    return;
  }
  const tenant = req.headers[keyHeader];
  if (typeof tenant !== 'string' || tenant === '') {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `send the tenant in the ${keyHeader} header` }) + '\n');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'x-cell': cell });
  res.end(JSON.stringify({ tenant, cell, method: req.method, path }) + '\n');
});

server.listen(port, () => console.log(`listening on ${server.address().port}, cell ${cell}`));
// ECS stops a task with SIGTERM: finish the requests in flight, then exit.
process.on('SIGTERM', () => server.close(() => process.exit(0)));
