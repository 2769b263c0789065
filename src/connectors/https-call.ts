// One HTTPS request of a connector (FHIR, the SMART token endpoint) with undici: TLS verified
// against the connector's CA file, to the origins the connector names and no other (undici's
// request never follows a redirect; a 3xx is answered as the refusal it is), bounded in time.
import { Agent, request } from "undici";
import { networkProblem, refused, statusProblem } from "./problem.js";

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export class HttpsPeer {
  private readonly agent: Agent;
  private readonly origins: Set<string>;

  constructor(
    /** the URLs the connector names: their origins are the only ones it reaches */
    urls: readonly string[],
    ca: string | undefined,
    private readonly timeoutMs: number,
    /** "FHIR server", for the words of a problem */
    readonly peer: string,
  ) {
    this.origins = new Set(urls.map((u) => new URL(u).origin));
    this.agent = new Agent({ connect: ca ? { ca } : {}, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  /** The request; a status outside 2xx is thrown as its problem unless `accept` lets it through. */
  async call(
    url: string,
    init: { method: string; headers?: Record<string, string>; body?: string | Buffer },
    accept: (status: number) => boolean = (s) => s >= 200 && s < 300,
  ): Promise<CallResult> {
    const origin = new URL(url).origin;
    if (!this.origins.has(origin)) throw refused(`the ${this.peer} pointed to another host: refused`);
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method: init.method as "GET",
        headers: init.headers,
        body: init.body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw networkProblem(err, this.peer);
    }
    const body = await res.body.text().catch(() => "");
    if (!accept(res.statusCode)) throw statusProblem(res.statusCode, this.peer);
    return { status: res.statusCode, headers: res.headers, body };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
