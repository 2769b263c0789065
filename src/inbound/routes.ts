// Which rules a received fax matches and where it goes (inbound.routes, docs/inbound.md). Rules are
// data: matched in order; a rule without `continue` ends the search; no match means the default
// route (the receiving user's mail, as before rules existed). Nothing is delivered anywhere a rule
// or the default does not name.
import type { InboundConfig, InboundDelivery, InboundRoute } from "../config/index.js";
import { compactNumberSpec, patternMatches } from "../recipients/index.js";
import { connectorTarget, kindLabel } from "../connectors/index.js";

export interface ReceivedFacts {
  /** the number dialled, the sender's number (E.164 with +, or null), the sender's CSID, our user */
  dialled: string | null;
  sender: string | null;
  csid: string | null;
  user: string;
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
  return true;
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
