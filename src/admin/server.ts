// The operator's window: GET /healthz (is this process alive?), GET /readyz (can it fax?) and
// GET /metrics (Prometheus text); what the checks mean is in ./health.ts.
// Plain node:http: two read-only routes do not need a framework. Bind it to loopback or a
// management network; it exposes no secrets and accepts no input.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseHostPort } from "../config/index.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";

import type { HealthReport } from "./health.js";

export type { HealthCheck, HealthReport } from "./health.js";

export interface AdminServerOptions {
  listen: string;
  metrics: Metrics;
  /** liveness, for GET /healthz */
  health: () => Promise<HealthReport>;
  /** readiness, for GET /readyz (without it /readyz answers as /healthz) */
  ready?: () => Promise<HealthReport>;
  logger: Logger;
}

export class AdminServer {
  private server: http.Server | null = null;

  constructor(private readonly opts: AdminServerOptions) {}

  async listen(): Promise<{ host: string; port: number }> {
    const { host, port } = parseHostPort(this.opts.listen, "admin.listen");
    const server = http.createServer((req, res) => {
      void this.handle(req, res);
    });
    server.keepAliveTimeout = 5000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const addr = server.address() as AddressInfo;
    return { host: addr.address, port: addr.port };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = (req.url ?? "/").split("?")[0];
    try {
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("method not allowed\n");
      } else if (url === "/healthz" || url === "/readyz") {
        const report = url === "/readyz" && this.opts.ready ? await this.opts.ready() : await this.opts.health();
        res.writeHead(report.status === "ok" ? 200 : 503, {
          "content-type": "application/json",
          "cache-control": "no-store",
        });
        res.end(`${JSON.stringify(report)}\n`);
      } else if (url === "/metrics") {
        const text = await this.opts.metrics.text();
        res.writeHead(200, { "content-type": this.opts.metrics.registry.contentType });
        res.end(text);
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /healthz, /readyz or /metrics\n");
      }
    } catch (err) {
      this.opts.logger.error({ err }, "admin request failed");
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("internal error\n");
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
