// Fax clients for one service endpoint: one keep-alive agent shared by every API key, and the
// client options (request variant, timeout) taken from the config in one place. The daemon
// (main.ts) and the CLI (cli/context.ts) both build their clients here.
import type { Agent } from "undici";
import type { ApiConfig } from "../config/index.js";
import type { Logger } from "../log/index.js";
import type { ApiCallObserver } from "../metrics/index.js";
import type { ApiGate, GateClass } from "./api-gate.js";
import type { ContactCache } from "./contact-cache.js";
import { createFaxAgent } from "./agent.js";
import { FaxClient } from "./client.js";
import type { FaxApi } from "./types.js";

export interface FaxClientFactoryOptions {
  baseUrl: string;
  caFile?: string;
  api: Pick<ApiConfig, "variant" | "timeoutMs">;
  /** Connections of the shared agent (default: the agent's own). */
  connections?: number;
  observer?: ApiCallObserver;
  /** The one gate every client of this process passes (rate, history budget). */
  gate?: ApiGate;
}

export class FaxClientFactory {
  /** The shared agent, for the few callers that build clients themselves. */
  readonly agent: Agent;

  constructor(private readonly opts: FaxClientFactoryOptions) {
    this.agent = createFaxAgent({
      caFile: opts.caFile,
      timeoutMs: opts.api.timeoutMs,
      ...(opts.connections ? { connections: opts.connections } : {}),
    });
  }

  /** A client for one key; `use` says whom it calls for (gate class, the user's cache and share). */
  withKey(
    apiKey: string,
    logger?: Logger,
    use: { gateClass?: GateClass; contactCache?: ContactCache; share?: () => Promise<() => void> } = {},
  ): FaxApi {
    return new FaxClient({
      baseUrl: this.opts.baseUrl,
      apiKey,
      variant: this.opts.api.variant,
      dispatcher: this.agent,
      timeoutMs: this.opts.api.timeoutMs,
      ...(this.opts.observer ? { observer: this.opts.observer } : {}),
      ...(this.opts.gate ? { gate: this.opts.gate } : {}),
      ...(logger ? { logger } : {}),
      ...use,
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
