// The one retention rule (issue 56): how long each kind of copy lives, the fax service's copy
// included, per user and per inbound group where a different time is needed. Durations as strings
// ("90d"), or "forever". The keys of before (queue.retentionDays, inbound.retentionDays,
// spool.doneRetentionDays) are still read: moveOldRetentionKeys turns them into this section
// before validation and names them in retention.oldKeys, which start and doctor warn about.
import { z } from "zod";
import { duration } from "./duration.js";

/** A time to keep a copy: a duration, or "forever" (null). */
const keep = () => z.union([z.literal("forever").transform(() => null), duration()]);

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,127}$/;

const perUser = z.object({ sent: keep(), received: keep(), service: keep() }).partial().strict();
const perGroup = z.object({ received: keep(), service: keep() }).partial().strict();

export const retentionSchema = z
  .object({
    /** sent faxes: the job, its documents and history, from when it finished */
    sent: keep().prefault("30d"),
    /** received faxes kept by the gateway, with their document, from when they came in */
    received: keep().prefault("90d"),
    /** the fax service's copy of each (DELETE /v1/fax/{id}); absent: it goes with the local copy */
    service: keep().optional(),
    /** links in mails (to a fax's console page): they stop working this long after the mail */
    links: keep().prefault("30d"),
    /** mails written to the outbox folder (notify.transport outbox:) */
    outbox: keep().prefault("30d"),
    /** originals in a user's spool done/ and failed/ folders */
    spoolDone: keep().prefault("7d"),
    spoolFailed: keep().prefault("30d"),
    /** a user's own times (a longer one for a records office, a shorter one for a clinic) */
    users: z.record(z.string().regex(NAME, "expected a user name"), perUser).default({}),
    /** an inbound group's times for the faxes it received (a fax in several groups: the longest) */
    groups: z.record(z.string().regex(NAME, "expected a group name"), perGroup).default({}),
    /** how often the rule is applied */
    checkEvery: duration({ min: "1m" }).prefault("1h"),
    /** set by the loader: the keys of before this file still uses (warned at start and by doctor) */
    oldKeys: z.array(z.string()).default([]),
  })
  .strict();

export type RetentionConfig = z.infer<typeof retentionSchema>;

/** Each key of before, the section's key it now is, and how its number reads. */
const OLD_KEYS: ReadonlyArray<{ section: string; key: string; to: string; zeroMeans: string }> = [
  { section: "queue", key: "retentionDays", to: "sent", zeroMeans: "0d" },
  { section: "inbound", key: "retentionDays", to: "received", zeroMeans: "0d" },
  // 0 meant "never pruned" for done/
  { section: "spool", key: "doneRetentionDays", to: "spoolDone", zeroMeans: "forever" },
];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The raw config with the keys of before moved into `retention` (a value already in `retention`
 * wins) and named in retention.oldKeys. A value that is not a number is left where it was, so
 * validation names it under its old key.
 */
export function moveOldRetentionKeys(raw: unknown): unknown {
  if (!isObject(raw)) return raw;
  const out: Record<string, unknown> = { ...raw };
  let retention: Record<string, unknown> | null = null;
  const oldKeys: string[] = [];
  for (const o of OLD_KEYS) {
    const section = out[o.section];
    if (!isObject(section) || !(o.key in section)) continue;
    const days = section[o.key];
    if (typeof days !== "number" || !Number.isFinite(days) || days < 0) continue;
    const { [o.key]: _moved, ...rest } = section;
    out[o.section] = rest;
    retention ??= isObject(out.retention) ? { ...out.retention } : out.retention === undefined ? {} : null;
    if (!retention) continue;
    if (retention[o.to] === undefined) retention[o.to] = days === 0 ? o.zeroMeans : `${days}d`;
    oldKeys.push(`${o.section}.${o.key}`);
  }
  if (retention && oldKeys.length) out.retention = { ...retention, oldKeys };
  return out;
}

/** The start and doctor warning for keys of before, or null. */
export function oldRetentionKeysWarning(r: Pick<RetentionConfig, "oldKeys">): string | null {
  if (r.oldKeys.length === 0) return null;
  return `${r.oldKeys.join(", ")} ${r.oldKeys.length === 1 ? "is" : "are"} read as the retention section; move ${r.oldKeys.length === 1 ? "it" : "them"} there (docs/compliance.md)`;
}
