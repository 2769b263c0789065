// Settings that contradict notify.attachments (notify/what-leaves.ts, the one rule for what of a
// fax leaves by mail): valid, and the rule wins, but the operator should know which of the two
// settings they got. Shown with the risky settings: at start, by `faxgate config check` and doctor.
import type { Config } from "./schema.js";

export function privacyContradictions(config: Config): string[] {
  const notify = config.notify;
  if (!notify || notify.attachments === "service") return [];
  const setting = notify.attachments;
  const out: string[] = [];
  const reporting = [
    ...(notify.report && notify.report !== "off" ? [`notify.report is "${notify.report}"`] : []),
    ...config.users
      .filter((u) => u.report && u.report !== "off")
      .map((u) => `users[${u.name}].report is "${u.report}"`),
  ];
  if (reporting.length)
    out.push(
      `${reporting.join(", ")} while notify.attachments is "${setting}": the mailed transmission report goes without the fax's first page${setting === "never" ? ", its subject and its file names" : ""}; the whole report stays in the console and \`faxgate report\``,
    );
  if (setting === "never") {
    const inbound = config.inbound;
    const mailed = [
      ...(inbound?.routes ?? []).flatMap((r) => r.deliver.map((d) => ({ d, where: `inbound.routes[${r.name}]` }))),
      ...(inbound?.default ?? []).map((d) => ({ d, where: "inbound.default" })),
    ]
      .filter(({ d }) => "mail" in d)
      .map(({ d, where }) => `${where} mails ${(d as { mail: string }).mail}`);
    if (mailed.length)
      out.push(
        `${mailed.join(", ")} "with the fax", but notify.attachments is "never": that mailbox gets only the notice that a fax came; deliver to a folder or a group inbox to keep the fax`,
      );
    if (!config.web)
      out.push(
        `notify.attachments is "never" and the web console is off (web:): mails say that a fax went or came, but users have nowhere to open it; turn the console on (with TLS)`,
      );
  }
  return out;
}
