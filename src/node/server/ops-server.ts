/**
 * A separate listener for `/metrics`, `/healthz` and `/readyz` (gateway.metrics.port), so
 * scraping and probes can live on an internal port away from client traffic. GET/HEAD only.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { opsAnswer, type OpsRoutes } from '../../core/http/health.js';

export interface RunningOpsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(host: string, port: number, routes: OpsRoutes): Promise<RunningOpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    opsAnswer(path, routes).then(
      (answer) => {
        if (!answer) {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
          return;
        }
        res.writeHead(answer.status, { 'content-type': answer.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : answer.body);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
