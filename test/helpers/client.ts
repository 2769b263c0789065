// FaxClients for tests, talking to a test emulator over real HTTPS. Clients of one emulator share
// one keep-alive agent (as the daemon's per-user clients do); close it with closeClients(emu).
import { request, type Agent } from "undici";
import { createFaxAgent, FaxClient, type FaxClientOptions } from "../../src/fax/client.js";
import type { ApiVariant } from "../../src/fax/types.js";

export interface EmulatorLike {
  baseUrl: string;
  caPem?: string;
  caFile?: string;
  adminKey?: string;
}

const agents = new WeakMap<EmulatorLike, Agent>();

export function agentFor(emu: EmulatorLike): Agent {
  let a = agents.get(emu);
  if (!a) {
    a = createFaxAgent({ ca: emu.caPem, caFile: emu.caPem ? undefined : emu.caFile, timeoutMs: 10_000 });
    agents.set(emu, a);
  }
  return a;
}

export function clientFor(
  emu: EmulatorLike,
  token: string,
  variant?: ApiVariant,
  extra: Partial<FaxClientOptions> = {},
): FaxClient {
  return new FaxClient({
    baseUrl: emu.baseUrl,
    apiKey: token,
    variant,
    dispatcher: agentFor(emu),
    timeoutMs: 10_000,
    ...extra,
  });
}

export async function closeClients(emu: EmulatorLike): Promise<void> {
  const a = agents.get(emu);
  agents.delete(emu);
  await a?.close();
}

/** A raw call to the emulator's own endpoints (/_emulator/...) with its admin key. */
export async function emulatorCall(
  emu: EmulatorLike,
  method: "GET" | "PUT" | "POST" | "PATCH",
  path: string,
  body?: unknown,
): Promise<unknown> {
  const res = await request(`${emu.baseUrl}${path}`, {
    method,
    dispatcher: agentFor(emu),
    headers: {
      authorization: `Basic ${emu.adminKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
  return text === "" ? null : JSON.parse(text);
}
