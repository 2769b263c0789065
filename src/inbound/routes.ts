// Which rules a received fax matches and where it goes (inbound.routes, docs/inbound.md). Rules are
// data: matched in order; a rule without `continue` ends the search; no match means the default
// route (the receiving user's mail, as before rules existed). Nothing is delivered anywhere a rule
// or the default does not name.
import vm from "node:vm";
import type { InboundConfig, InboundDelivery, InboundRoute } from "../config/index.js";
import { compactNumberSpec, patternMatches } from "../recipients/index.js";
import { connectorTarget, kindLabel } from "../connectors/index.js";

export interface ReceivedFacts {
  /** the number dialled, the sender's number (E.164 with +, or null), the sender's CSID, our user */
  dialled: string | null;
  sender: string | null;
  csid: string | null;
  user: string;
  /**
   * The fax's OCR text: undefined while it is not known (rules with match.text do not match yet:
   * the caller holds the fax, see waitsForText), null when there is none (unreadable, OCR off).
   */
  text?: string | null;
}

export interface RouteDecision {
  /** the matching rules' names, or "default" */
  rules: string[];
  deliveries: InboundDelivery[];
}

function numberMatches(spec: string, n: string | null): boolean {
  if (!n) return false;
  const p = compactNumberSpec(spec);
  return patternMatches(p.startsWith("+") ? p : `+${p}`, n.startsWith("+") ? n : `+${n}`);
}

function csidMatches(spec: string, csid: string | null): boolean {
  if (!csid) return false;
  const a = spec.trim().toLowerCase();
  const b = csid.trim().toLowerCase();
  return a.endsWith("*") ? b.startsWith(a.slice(0, -1)) : a === b;
}

export function ruleMatches(r: InboundRoute, f: ReceivedFacts): boolean {
  const m = r.match;
  if (m.dialled !== undefined && !numberMatches(m.dialled, f.dialled)) return false;
  if (m.sender !== undefined && !numberMatches(m.sender, f.sender)) return false;
  if (m.csid !== undefined && !csidMatches(m.csid, f.csid)) return false;
  if (m.user !== undefined && m.user !== f.user) return false;
  if (m.text !== undefined && !textMatches(m.text, f.text)) return false;
  return true;
}

/** Lower-case words joined by one space: a phrase is found across OCR's line breaks and spacing. */
const words = (s: string): string => (s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join(" ");

// a pattern runs in a context of its own under vm's timeout: a backtracking pattern is cut off
const TEST = new vm.Script("re.test(text)");

function textMatches(m: NonNullable<InboundRoute["match"]["text"]>, text: string | null | undefined): boolean {
  if (!text) return false;
  if (typeof m === "string") return ` ${words(text)} `.includes(` ${words(m)} `);
  try {
    return TEST.runInNewContext({ re: new RegExp(m.pattern, "iu"), text }, { timeout: m.within }) === true;
  } catch {
    return false;
  }
}

/** True when a rule routes by text: the fax is held until its text is known (ocr.waitFor at most). */
export function waitsForText(cfg: InboundConfig): boolean {
  return cfg.routes.some((r) => r.match.text !== undefined);
}

/**
 * Where a fax waits for its text, or only for its reply code to be looked for (no rule on text):
 * the default route's inboxes only (no mail, no folder yet). The rule's name says which it waits for.
 */
export function holdForText(cfg: InboundConfig, reads = true): RouteDecision {
  const what = reads && waitsForText(cfg) ? "its text" : "its reply code to be looked for";
  return { rules: [`waiting for ${what}`], deliveries: cfg.default.filter((d) => "inbox" in d) };
}

export function route(cfg: InboundConfig, f: ReceivedFacts): RouteDecision {
  const rules: string[] = [];
  const deliveries: InboundDelivery[] = [];
  for (const r of cfg.routes) {
    if (!ruleMatches(r, f)) continue;
    rules.push(r.name);
    deliveries.push(...r.deliver);
    if (!r.continue) break;
  }
  if (rules.length === 0) return { rules: ["default"], deliveries: [...cfg.default] };
  return { rules, deliveries };
}

/** The group inboxes a decision puts the fax in. */
export function inboxesOf(d: RouteDecision): string[] {
  return [...new Set(d.deliveries.flatMap((x) => ("inbox" in x ? [x.inbox] : [])))];
}

/** For the timeline and logs: where it went, without any document content. */
export function describeDelivery(d: InboundDelivery): string {
  if ("receiver" in d) return "the receiving user's mail";
  if ("users" in d) return `mail to ${d.users.join(", ")}`;
  if ("mail" in d) return `mail to ${d.mail}`;
  if ("folder" in d) return `folder ${d.folder}`;
  if ("inbox" in d) return `group ${d.inbox}`;
  const c = connectorTarget(d);
  return c ? `${kindLabel(c.kind)} ${c.target}` : "a delivery";
}
