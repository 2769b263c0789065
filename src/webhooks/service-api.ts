// The service's webhook registrations (POST/GET/PUT/DELETE /webhooks, admin key), for the
// `faxgate webhooks` command. Kept apart from the fax client: only the operator's command uses it.
import { request, type Dispatcher } from "undici";
import { FaxgateError, type ErrorCode } from "../errors.js";

export const FAX_EVENTS = [
  "fax.v1.outbound.succeed",
  "fax.v1.outbound.failed",
  "fax.v1.outbound.complete",
  "fax.v1.inbound.succeed",
  "fax.v1.inbound.failed",
  "fax.v1.inbound.complete",
] as const;

export interface ServiceWebhook {
  uuid: string;
  name: string;
  url: string;
  events: Record<string, boolean>;
  auth?: string | null;
  accountId?: string;
  numberId?: string | null;
  attachmentEnabled?: boolean;
  createdAt?: string;
}

export interface NewWebhook {
  name: string;
  url: string;
  events: Record<string, boolean>;
  auth?: string;
  accountId?: string;
  attachmentEnabled?: boolean;
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: "API_INVALID_INPUT",
  401: "API_AUTH",
  403: "API_FORBIDDEN",
  404: "API_NOT_FOUND",
  429: "API_RATE_LIMITED",
};

export class WebhookApi {
  constructor(
    private readonly opts: { baseUrl: string; adminKey: string; dispatcher: Dispatcher; timeoutMs: number },
  ) {}

  list(): Promise<ServiceWebhook[]> {
    return this.call<ServiceWebhook[]>("GET", "/webhooks");
  }

  create(w: NewWebhook): Promise<ServiceWebhook> {
    return this.call<ServiceWebhook>("POST", "/webhooks", w);
  }

  update(id: string, w: Partial<NewWebhook>): Promise<ServiceWebhook> {
    return this.call<ServiceWebhook>("PUT", `/webhooks/${encodeURIComponent(id)}`, w);
  }

  async remove(id: string): Promise<void> {
    await this.call<unknown>("DELETE", `/webhooks/${encodeURIComponent(id)}`);
  }

  private async call<T>(method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown): Promise<T> {
    const where = `${method} ${path.replace(/\/[0-9a-f-]{20,}$/i, "/:id")}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.opts.baseUrl.replace(/\/+$/, "")}${path}`, {
        method,
        dispatcher: this.opts.dispatcher,
        headers: {
          authorization: `Basic ${this.opts.adminKey}`,
          accept: "application/json",
          ...(body ? { "content-type": "application/json" } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
      });
    } catch (err) {
      throw new FaxgateError("API_NETWORK", `${where}: ${(err as Error).message}`, { temporary: true });
    }
    const text = await res.body.text();
    let parsed: unknown = null;
    if (text.trim()) {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (res.statusCode < 300)
          throw new FaxgateError("API_BAD_RESPONSE", `${where} answered with something that is not JSON`);
      }
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return parsed as T;
    const e = (parsed as { error?: { name?: string; message?: string } | string } | null)?.error;
    const said = typeof e === "string" ? e : e ? `${e.name ?? "Error"}: ${e.message ?? ""}` : `HTTP ${res.statusCode}`;
    const code = STATUS_CODES[res.statusCode] ?? (res.statusCode >= 500 ? "API_SERVER" : "API_REJECTED");
    throw new FaxgateError(code, `${where}: ${said}`, {
      httpStatus: res.statusCode,
      temporary: res.statusCode >= 500 || res.statusCode === 429,
    });
  }
}
