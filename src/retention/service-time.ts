// doctor's comparison of the retention rule with the account's storeFaxesTime (days the service
// keeps a fax itself; 0 or absent: for ever): a service that keeps faxes longer than the rule is
// fine only while the gateway's deletes take, one that keeps them shorter loses copies the rule
// still means to keep (evidence downloads, reports).
import type { RetentionConfig } from "../config/index.js";

const DAY = 86_400_000;

export function storeTimeCheck(
  storeFaxesTime: string | undefined,
  rule: Pick<RetentionConfig, "service" | "sent" | "received">,
): { name: string; ok: boolean; warn?: boolean; detail: string } {
  const name = "service retention";
  const ours =
    rule.service === undefined
      ? rule.sent === null || rule.received === null
        ? null
        : Math.max(rule.sent, rule.received)
      : rule.service;
  const oursText = ours === null ? "forever" : `${Math.round(ours / DAY)} days`;
  if (storeFaxesTime === undefined)
    return {
      name,
      ok: true,
      warn: true,
      detail: `the service does not say its storeFaxesTime; the rule keeps its copy ${oursText}`,
    };
  const days = Number(storeFaxesTime);
  if (!Number.isFinite(days) || days <= 0)
    return {
      name,
      ok: true,
      detail: `the service keeps faxes until deleted; the gateway deletes them after ${oursText}`,
    };
  if (ours !== null && days * DAY < ours)
    return {
      name,
      ok: true,
      warn: true,
      detail: `the service purges faxes after ${days} days (storeFaxesTime), before the rule's ${oursText}: copies the rule keeps are lost there`,
    };
  return {
    name,
    ok: true,
    detail: `the service purges after ${days} days; the rule deletes its copy after ${oursText}`,
  };
}
