// GET /api/search (INTERFACES.md section 8): one search over the received faxes the signed-in
// person may see (their own, their groups' inboxes, everything for an operator): the OCR text,
// the sender's number, the number dialled, the CSID and the inbox note; within a date range and
// states; ranked, each with the line of its text that matched. With ocr.sent, the sent faxes
// they may see (their own; everything for an operator) too, by their text and the numbers
// dialled; each answer says which kind it is and links to its page. Every search is a ledger row
// (who, how many words, which faxes were shown), never the words themselves: they may be a
// patient's name.
import type { FastifyPluginAsync } from "fastify";
import type { InboundConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import { faxNumber, pages } from "../format.js";
import type { Ledger } from "../ledger/index.js";
import { type ReceivedState, RECEIVED_STATES } from "../received/index.js";
import { type Db, searchFaxes, searchWords } from "../store/index.js";
import { recordConsole } from "./ledger-rows.js";
import { sessionOf } from "./sessions.js";
import { groupsOf } from "./shared-inbox.js";

export interface SearchDeps {
  store: { readonly sql: Db };
  ledger: Pick<Ledger, "record">;
  /** absent: no shared inboxes (a person sees their own faxes only) */
  inbound?: () => InboundConfig;
  defaultCountryCode: () => string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A date (the whole day) or an ISO time, as the lower or upper end of a range. */
function timeOf(v: string | undefined, key: string, end: boolean): string | undefined {
  if (!v) return undefined;
  const t = DAY.test(v) ? Date.parse(`${v}T00:00:00Z`) + (end ? 86_400_000 : 0) : Date.parse(v);
  if (!Number.isFinite(t)) throw new FaxgateError("USAGE", `${key} must be a date (2026-11-28) or an ISO time`);
  return new Date(t).toISOString();
}

export const searchRoutes: FastifyPluginAsync<SearchDeps> = async (api, deps) => {
  api.get("/api/search", async (req) => {
    const s = sessionOf(req);
    const q = req.query as Record<string, string | undefined>;
    const words = searchWords(q.q ?? "");
    const states = (q.state ?? "")
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean);
    for (const st of states)
      if (!RECEIVED_STATES.includes(st as ReceivedState))
        throw new FaxgateError("USAGE", `state must be one of ${RECEIVED_STATES.join(", ")}, got "${st}"`);
    const from = timeOf(q.from, "from", false);
    const until = timeOf(q.until, "until", true);
    if (words.length === 0 && !from && !until && states.length === 0)
      throw new FaxgateError("USAGE", "give words to look for (q), or a date range or state");
    const limit = Math.min(100, Math.max(1, Number.parseInt(q.limit ?? "50", 10) || 50));
    const hits = await searchFaxes(deps.store.sql, {
      words,
      from,
      until,
      states: states as ReceivedState[],
      visibleTo: s.admin ? "all" : { user: s.user, groups: deps.inbound ? groupsOf(deps.inbound(), s.user) : [] },
      limit,
    });
    await recordConsole(
      deps.ledger,
      req,
      "searched",
      { kind: "person", id: s.user },
      {
        words: words.length,
        ranged: Boolean(from || until),
        results: hits.length,
        shown: hits
          .slice(0, 20)
          .map((h) => (h.kind === "received" ? h.fax.id : h.job.id))
          .join(","),
      },
    );
    const cc = deps.defaultCountryCode();
    return {
      words,
      results: hits.map((h) =>
        h.kind === "received"
          ? {
              kind: "received",
              id: h.fax.id,
              link: `/inbound.html?id=${encodeURIComponent(h.fax.id)}`,
              from: faxNumber(h.fax.sender, cc),
              csid: h.fax.csid,
              dialled: faxNumber(h.fax.dialled, cc),
              receivedAt: h.fax.receivedAt,
              pages: h.fax.pages,
              pagesText: pages(h.fax.pages),
              state: h.fax.state,
              user: h.fax.user,
              groups: h.fax.groups,
              score: h.score,
              matched: h.matched,
              line: h.line,
            }
          : {
              kind: "sent",
              id: h.job.id,
              link: `/fax.html?id=${encodeURIComponent(h.job.id)}`,
              to: h.job.numbers.map((n) => faxNumber(n, cc)),
              sentAt: h.job.sentAt,
              pages: h.job.pages,
              pagesText: h.job.pages === null ? null : pages(h.job.pages),
              user: h.job.user,
              score: h.score,
              matched: h.matched,
              line: h.line,
            },
      ),
    };
  });
};
