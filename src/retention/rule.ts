// The retention rule as times: how long this item's local copy and its service copy live, by its
// kind, its user's own times and its inbound groups' (a fax in several groups: the longest; a
// "forever" anywhere wins). Read from the live config on every pass, so a reload takes effect.
import type { RetentionConfig } from "../config/index.js";
import type { PurgedItem } from "../store/index.js";

type Item = Pick<PurgedItem, "kind" | "user" | "labels">;
type Keep = number | null;

/** A time far enough back that nothing was finished before it: "select none". */
const NEVER_BEFORE = "0000-01-01T00:00:00.000Z";
/** A time nothing reaches: a copy kept for ever. */
const NEVER_DUE = "9999-12-31T23:59:59.999Z";

const longest = (ks: Keep[]): Keep => (ks.some((k) => k === null) ? null : Math.max(...(ks as number[])));

export class RetentionRule {
  constructor(private readonly cfg: () => RetentionConfig) {}

  /** How long the gateway keeps `item` (ms; null: for ever). */
  local(item: Item): Keep {
    return this.pick(item, item.kind === "job" ? "sent" : "received") ?? null;
  }

  /** How long the service keeps `item`'s copy: its own rule, else the local copy's. */
  service(item: Item): Keep {
    const own = this.pick(item, "service");
    return own === undefined ? this.local(item) : own;
  }

  /** The shortest local time of a kind: items older than this are the candidates. */
  shortestLocal(kind: "job" | "received"): Keep {
    const c = this.cfg();
    const key = kind === "job" ? "sent" : "received";
    const all: Keep[] = [c[key], ...Object.values(c.users).map((u) => (key in u ? (u[key] as Keep) : c[key]))];
    if (kind === "received")
      all.push(...Object.values(c.groups).map((g) => ("received" in g ? (g.received as Keep) : c.received)));
    return shortest(all);
  }

  /** The shortest service time of a kind. */
  shortestService(kind: "job" | "received"): Keep {
    const c = this.cfg();
    const base = c.service === undefined ? this.shortestLocal(kind) : c.service;
    const all: Keep[] = [base, ...Object.values(c.users).map((u) => (u.service !== undefined ? u.service : base))];
    if (kind === "received")
      all.push(...Object.values(c.groups).map((g) => (g.service !== undefined ? g.service : base)));
    return shortest(all);
  }

  /** `keep` before `now` as the ISO time items must be older than ("none" for ever). */
  static before(now: number, keep: Keep): string {
    return keep === null ? NEVER_BEFORE : new Date(now - keep).toISOString();
  }

  /** When a copy made at `at` (ISO) is due to go. */
  static due(at: string, keep: Keep): string {
    return keep === null ? NEVER_DUE : new Date(Date.parse(at) + keep).toISOString();
  }

  /** The item's time for `key`; undefined only for a service time nobody set. */
  private pick(item: Item, key: "sent" | "received" | "service"): Keep | undefined {
    const c = this.cfg();
    const overrides: Keep[] = [];
    const user = c.users[item.user];
    if (user && key in user) overrides.push(user[key] as Keep);
    if (item.kind === "received")
      for (const g of item.labels) {
        const group = c.groups[g];
        if (group && key in group && key !== "sent") overrides.push(group[key as "received" | "service"] as Keep);
      }
    if (overrides.length) return longest(overrides);
    return key === "service" ? c.service : c[key];
  }
}

function shortest(ks: Keep[]): Keep {
  const finite = ks.filter((k): k is number => k !== null);
  return finite.length ? Math.min(...finite) : null;
}
