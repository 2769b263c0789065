// What the connector tests share: a store with a received fax kept in it, a secrets file, the
// delivery queue as the composition root builds it (real ledger, real store), and a row queued
// the way the inbound intake queues it.
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { Clock } from "../../src/clock.js";
import { DeliveryQueue } from "../../src/connectors/queue.js";
import { connectorTarget } from "../../src/connectors/targets.js";
import { configSchema } from "../../src/config/schema.js";
import type { InboundDelivery } from "../../src/config/index.js";
import { silentLogger } from "../../src/log/index.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { listDeliveries, queueDeliveries } from "../../src/store/sql/deliveries.js";
import { claimText, textRead } from "../../src/store/sql/received-text.js";
import { testLedger } from "../helpers/ledger.js";
import { receivedInput } from "../helpers/store.js";

/** A route's delivery as the config loader reads it (defaults filled in, checked by the schema). */
export function parseDelivery(raw: Record<string, unknown>): InboundDelivery {
  const cfg = configSchema.parse({
    api: { baseUrl: "sandbox" },
    users: [{ name: "alice", email: "alice@example.com", apiKey: "k" }],
    inbound: { default: [raw] },
  } as never);
  return cfg.inbound.default[0]!;
}

/** A received fax kept in `store` (a real PDF; the sender and CSID as the service gives them). */
export async function keptFax(
  store: QueueStore,
  over: { document?: Uint8Array; receivedAt?: string; messageId?: string; text?: string } = {},
): Promise<string> {
  const { text, ...fields } = over;
  const { fax } = await store.keepReceived(
    receivedInput({
      sender: "+15559990000",
      csid: "CLINIC LAB",
      receivedAt: "2026-03-02T09:58:00.000Z",
      ...fields,
      ...(text !== undefined ? { readText: { waitsUntil: null } } : {}),
    }),
  );
  if (over.text !== undefined) {
    // the OCR duty's own steps: claim the fax's text, store what was read
    const claimed = await claimText(store.sql, { leaseMs: 60_000, pick: (users) => users[0]! });
    if (claimed?.faxId !== fax.id) throw new Error("another fax's text was due");
    if (!(await textRead(store.sql, fax.id, { body: over.text, pdf: null, pages: 1 })))
      throw new Error("text not kept");
  }
  return fax.id;
}

/** Queues `faxId` for `delivery` as the inbound intake does. */
export async function queueFor(store: QueueStore, faxId: string, delivery: InboundDelivery, rule = "lab results") {
  const t = connectorTarget(delivery);
  if (!t) throw new Error("not a connector delivery");
  await queueDeliveries(store.sql, [{ faxId, ...t, rule, owner: "alice" }]);
  return (await listDeliveries(store.sql, { faxId })).find((d) => d.target === t.target)!;
}

export function secretsFile(dir: string, values: Record<string, string>): string {
  const file = path.join(dir, "secrets.env");
  writeFileSync(
    file,
    Object.entries(values)
      .map(([k, v]) => `${k}="${v.replace(/\n/g, "\\n")}"`)
      .join("\n"),
    { mode: 0o600 },
  );
  return file;
}

export function deliveryQueue(store: QueueStore, clock: Clock, secrets: string | null, owner = "gw-test") {
  return new DeliveryQueue({
    store,
    ledger: testLedger(store),
    secretsFile: () => secrets,
    owner,
    clock,
    logger: silentLogger(),
    intervalMs: 3_600_000,
  });
}

export const rowOf = async (store: QueueStore, faxId: string) => (await listDeliveries(store.sql, { faxId }))[0]!;
