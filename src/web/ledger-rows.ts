// The console's ledger rows (docs/compliance.md): every view and download of a fax, and every
// operation on a job, by the signed-in person (an operator's session as the operator), with the
// client's address. Recorded before the answer is sent: a read the ledger could not record is
// not served.
import type { FastifyRequest } from "fastify";
import type { Ledger, LedgerAction, LedgerObject } from "../ledger/index.js";
import { sessionOf } from "./sessions.js";

export function recordConsole(
  ledger: Pick<Ledger, "record">,
  req: FastifyRequest,
  action: LedgerAction,
  object: LedgerObject,
  detail?: Record<string, string | number | boolean>,
): Promise<void> {
  const s = sessionOf(req);
  return ledger.record({
    action,
    actor: { kind: s.admin ? "operator" : "person", id: s.user },
    object,
    door: "console",
    client: req.ip,
    ...(detail ? { detail } : {}),
  });
}
