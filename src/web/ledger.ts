// The operator's ledger and legal-hold pages (docs/console.md, docs/compliance.md): the ledger
// searched with `faxgate audit export`'s filters, newest first, a page at a time, and exported as
// the CLI exports it; legal holds listed, added and released through the retention module, each
// change a ledger row with door console. Anyone but an operator is refused 403.
//
// Reading the ledger is not itself a ledger row: its rows hold no document and no number, so a
// look at them is not a read of a fax (docs/compliance.md says so).
//
// A number filter arrives in the query string: refusals here are answered without throwing, so
// the console's refusal log (answers.ts logs the URL) never sees it.
import { Readable } from "node:stream";
import { isFaxgateError } from "../errors.js";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  LEDGER_ACTIONS,
  type LedgerAction,
  type LedgerFilter,
  type LedgerRow,
  LEDGER_EXPORT_FORMATS,
  type LedgerExportFormat,
  ledgerExportHeader,
  ledgerExportLine,
  parseIsoTime,
  parseObjectRef,
} from "../ledger/index.js";
import { type LegalHolds, shownHoldValue } from "../retention/index.js";
import type { HoldKind, LegalHold } from "../store/index.js";
import { sessionOf } from "./sessions.js";

/** Rows per page of the ledger page. */
export const LEDGER_PAGE_ROWS = 50;

/** What the pages read of the ledger (SqlLedger). */
export interface LedgerReader {
  newest(filter: LedgerFilter, beforeSeq?: number): Promise<LedgerRow[]>;
  all(filter: LedgerFilter): AsyncGenerator<LedgerRow>;
}

export interface LedgerPagesDeps {
  ledger: LedgerReader;
  holds: LegalHolds;
}

type Query = Record<string, string | undefined>;

/** The filter a query names, or the reason it names none (the reason never repeats a value). */
function readFilter(q: Query): LedgerFilter | { refused: string } {
  const f: LedgerFilter = {};
  for (const key of ["since", "until"] as const)
    if (q[key]) {
      const t = parseIsoTime(q[key]);
      if (t === null) return { refused: `${key}: expected an ISO 8601 date or date-time such as 2026-12-31` };
      f[key] = t;
    }
  if (q.user) f.user = q.user;
  if (q.object) {
    const ref = parseObjectRef(q.object);
    if (!ref) return { refused: "object: expected KIND:ID, e.g. job:J123 or received:R9" };
    f.object = ref;
  }
  if (q.action) {
    if (!(LEDGER_ACTIONS as readonly string[]).includes(q.action))
      return { refused: `action: expected one of ${LEDGER_ACTIONS.join(", ")}` };
    f.action = q.action as LedgerAction;
  }
  if (q.number) f.number = q.number;
  return f;
}

function refuse(reply: FastifyReply, status: number, error: string) {
  return reply.code(status).send({ error, ...(status === 400 ? { code: "API_INVALID_INPUT" } : {}) });
}

/**
 * A hold change's refusal: the retention module's words, with the status of what was wrong (its
 * API_INVALID_INPUT is the request's fault here, not the fax service's).
 */
async function holdChange<T>(reply: FastifyReply, change: () => Promise<T>): Promise<T | FastifyReply> {
  try {
    return await change();
  } catch (err) {
    if (!isFaxgateError(err)) throw err;
    if (err.code === "HOLD_NOT_FOUND") return reply.code(404).send({ error: err.message, code: err.code });
    if (err.code === "API_INVALID_INPUT") return reply.code(400).send({ error: err.message, code: err.code });
    throw err;
  }
}

const notOperator = (req: FastifyRequest): boolean => !sessionOf(req).admin;
const FORBIDDEN = "only an operator (role admin) may see the ledger and legal holds";

/** A hold as the console shows it: a held number not whole, as the CLI prints it. */
const holdJson = (h: LegalHold) => ({ ...h, value: shownHoldValue(h) });

export const ledgerRoutes: FastifyPluginAsync<{ pages?: LedgerPagesDeps }> = async (api, opts) => {
  const pages = opts.pages;
  if (!pages) return;

  api.get("/api/admin/ledger", async (req, reply) => {
    if (notOperator(req)) return refuse(reply, 403, FORBIDDEN);
    const q = req.query as Query;
    const filter = readFilter(q);
    if ("refused" in filter) return refuse(reply, 400, filter.refused);
    let before: number | undefined;
    if (q.page) {
      before = Number(q.page);
      if (!Number.isSafeInteger(before) || before < 1)
        return refuse(reply, 400, "page: expected the `next` of the page before (a row's seq)");
    }
    const rows = await pages.ledger.newest({ ...filter, limit: LEDGER_PAGE_ROWS + 1 }, before);
    const more = rows.length > LEDGER_PAGE_ROWS;
    const shown = rows.slice(0, LEDGER_PAGE_ROWS);
    return { rows: shown, next: more ? shown.at(-1)!.seq : null, actions: LEDGER_ACTIONS };
  });

  api.get("/api/admin/ledger/export", async (req, reply) => {
    if (notOperator(req)) return refuse(reply, 403, FORBIDDEN);
    const q = req.query as Query;
    const format = (q.format ?? "jsonl") as LedgerExportFormat;
    if (!LEDGER_EXPORT_FORMATS.includes(format)) return refuse(reply, 400, "format: expected jsonl or csv");
    const filter = readFilter(q);
    if ("refused" in filter) return refuse(reply, 400, filter.refused);
    const { ledger } = pages;
    async function* lines() {
      const header = ledgerExportHeader(format);
      if (header) yield header;
      for await (const r of ledger.all(filter as LedgerFilter)) yield ledgerExportLine(format, r);
    }
    return reply
      .type(format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8")
      .header("content-disposition", `attachment; filename="faxgate-ledger.${format}"`)
      .send(Readable.from(lines()));
  });

  api.get("/api/admin/holds", async (req, reply) => {
    if (notOperator(req)) return refuse(reply, 403, FORBIDDEN);
    const all = (req.query as Query).all === "1";
    return { holds: (await pages.holds.list(all)).map(holdJson) };
  });

  api.post("/api/admin/holds", async (req, reply) => {
    if (notOperator(req)) return refuse(reply, 403, FORBIDDEN);
    const b = (req.body ?? {}) as Record<string, unknown>;
    const text = (k: string): string => (typeof b[k] === "string" ? (b[k] as string) : "");
    return holdChange(reply, async () => {
      const h = await pages.holds.add({
        kind: text("kind") as HoldKind,
        value: text("value"),
        reason: text("reason"),
        by: sessionOf(req).user,
        door: "console",
        client: req.ip,
      });
      return reply.code(201).send({ hold: holdJson(h) });
    });
  });

  api.post("/api/admin/holds/:id/release", async (req, reply) => {
    if (notOperator(req)) return refuse(reply, 403, FORBIDDEN);
    const b = (req.body ?? {}) as Record<string, unknown>;
    return holdChange(reply, async () => {
      const h = await pages.holds.release((req.params as { id: string }).id, {
        reason: typeof b.reason === "string" ? b.reason : "",
        by: sessionOf(req).user,
        door: "console",
        client: req.ip,
      });
      return { hold: holdJson(h) };
    });
  });
};
