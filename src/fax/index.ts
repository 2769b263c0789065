// The face of fax/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { FaxApiError, isFaxApiError } from "./api-error.js";
export { ApiGate } from "./api-gate.js";
export type { GateClass } from "./api-gate.js";
export { checkKey, isNotShown, isUnauthorized } from "./check-key.js";
export { FaxClientFactory } from "./client-factory.js";
export { FaxClient } from "./client.js";
export { ContactCache } from "./contact-cache.js";
export { offsetMemoryOf, walkHistory } from "./history-walk.js";
export { toFaxRecord } from "./normalize.js";
export { explainResult } from "./result-codes.js";
export { explainFailure, operatorRules } from "./result-rules.js";
export type { ResultRule } from "./result-rules.js";
export type {
  ApiKey,
  Contact,
  FaxApi,
  FaxFile,
  FaxRecord,
  HistoryQuery,
  SendFaxRequest,
  SendManyRequest,
  SendManyResult,
  User,
} from "./types.js";
export { notifyOption, UserDirectory } from "./user-directory.js";
export { UserShare } from "./user-share.js";
