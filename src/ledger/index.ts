// The face of ledger/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { LEDGER_ACTIONS, recipientEvents } from "./events.js";
export type { Ledger, LedgerAction, LedgerActor, LedgerDoor, LedgerFilter, LedgerObject, LedgerRow } from "./events.js";
export { LEDGER_EXPORT_FORMATS, ledgerExportHeader, ledgerExportLine } from "./export-format.js";
export type { LedgerExportFormat } from "./export-format.js";
export { parseIsoTime, parseObjectRef } from "./filter.js";
export { SqlLedger } from "./ledger.js";
export { LEDGER_KEY_NAME, ledgerNumberKey } from "./number-key.js";
