// A bare HTTP(S) server that records what the emulator's webhooks send and answers with the
// statuses a test queues up (default 200). Waiting is on requests, never on time.
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { WireJson } from "../helpers/wire-json.js";

export interface SinkRequest {
  at: number;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: WireJson;
}

export interface Sink {
  url: string;
  requests: SinkRequest[];
  /** statuses for the next requests, in order; then 200 */
  answers: number[];
  /** resolves once `n` requests have arrived (rejects after `timeoutMs`) */
  waitFor(n: number, timeoutMs?: number): Promise<SinkRequest[]>;
  close(): Promise<void>;
}

export async function startSink(tls?: { key: string; cert: string }): Promise<Sink> {
  const requests: SinkRequest[] = [];
  const answers: number[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      requests.push({
        at: Date.now(),
        path: req.url ?? "/",
        headers: req.headers,
        body: text ? JSON.parse(text) : null,
      });
      res.writeHead(answers.shift() ?? 200).end();
      for (const w of [...waiters]) if (requests.length >= w.n) w.resolve();
    });
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}/hook`,
    requests,
    answers,
    waitFor(n, timeoutMs = 10_000) {
      if (requests.length >= n) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`only ${requests.length} of ${n} webhook requests arrived`)),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(requests);
          },
        });
      });
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
