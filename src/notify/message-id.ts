// The Message-ID of a notification mail is derived from the notification itself, so every try of
// the same notification carries the same id: a smarthost (or the outbox) can recognise a retry of
// a mail it already has, and a restart never produces a second, different mail.
import type { Notification } from "../store/index.js";
import { sha256Hex } from "../sha256.js";

export function notificationMessageId(n: Pick<Notification, "id" | "dedupeKey" | "createdAt">, from: string): string {
  const domain = from.split("@").pop() || "faxgate.invalid";
  const stamp = n.createdAt.replace(/[-:]/g, "").replace(/\.\d+/, "");
  // the hash tells apart notification #7 of one database from #7 of another
  const hash = sha256Hex(`${n.id}\n${n.dedupeKey}\n${n.createdAt}`).slice(0, 12);
  return `<${stamp}.n${n.id}.${hash}.faxgate@${domain}>`;
}
