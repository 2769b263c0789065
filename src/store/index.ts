// The face of store/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { DaemonLock } from "./daemon-lock.js";
export { newNumbers, waitsForAddress, waitsForConfirmation } from "./job-state.js";
export type { AcceptedPayload, AlertPayload, KeyExpiryPayload, RejectedPayload } from "./notification-payloads.js";
export { openLocalStore, openStore } from "./open.js";
export type { OpenStoreOptions } from "./open.js";
export type { ClaimedGroup, FaxResultFields, QueueStore, RecipientKey } from "./queue-store.js";
export type { ReceivedStore } from "./received.js";
export { WHOLE_MESSAGE } from "./signed-uses.js";
export type { Db, Runner } from "./sql/db.js";
export {
  claimDeliveries,
  deliverAgain,
  deliveryDone,
  deliveryFailed,
  deliveryRetry,
  extendDelivery,
  listDeliveries,
  queueDeliveries,
} from "./sql/deliveries.js";
export type { Delivery, DeliveryKind } from "./sql/deliveries.js";
export { deleteDirectoryEntry, directoryEntries, directoryEntry, writeDirectoryEntry } from "./sql/directory.js";
export type { DirectoryEntry, DirectoryKind } from "./sql/directory.js";
export { FactorPending } from "./sql/factor-pending.js";
export type { FactorPendingKey, FactorPendingRecord } from "./sql/factor-pending.js";
export { FleetBudget } from "./sql/fleet-budget.js";
export { getState, stateOnce } from "./sql/kv.js";
export {
  appendLedger,
  canonicalRow,
  GENESIS_HASH,
  LEDGER_SEAL_BATCH,
  ledgerHead,
  ledgerPending,
  ledgerRows,
  sealPending,
  sealRow,
} from "./sql/ledger.js";
export type { LedgerFields, LedgerRecord } from "./sql/ledger.js";
export { putOidcIdToken, takeOidcIdToken } from "./sql/oidc-id-tokens.js";
export { putOidcPending, takeOidcPending } from "./sql/oidc-pending.js";
export type { OidcPendingRecord } from "./sql/oidc-pending.js";
export { PersonKeys } from "./sql/person-keys.js";
export type { PersonKey } from "./sql/person-keys.js";
export {
  claimText,
  endTextWait,
  getReceivedText,
  textFailed,
  textNotRead,
  textRead,
  textsToRoute,
  textUnreadable,
} from "./sql/received-text.js";
export type { ReceivedText } from "./sql/received-text.js";
export { linkReply } from "./sql/reply-links.js";
export {
  addHold,
  claimServicePurges,
  HOLD_KINDS,
  listHolds,
  purgeExpired,
  queueServiceCopies,
  releaseHold,
  RETENTION_BATCH,
  servicePurged,
  servicePurgeFailed,
  takeBackServicePurges,
} from "./sql/retention.js";
export type { HoldKind, LegalHold, PurgedItem, ServicePurge } from "./sql/retention.js";
export { searchFaxes, searchWords } from "./sql/search.js";
export { claimSentText, queueSentTexts, sentTextFailed, sentTextRead, sentTextUnreadable } from "./sql/sent-text.js";
export type { SentText } from "./sql/sent-text.js";
export { deleteSession, getSession, listSessions, putSession, sessionKey } from "./sql/shared-state.js";
export { SignInFactors } from "./sql/sign-in-factors.js";
export type { SignInFactor } from "./sql/sign-in-factors.js";
export { TEXT_STATES, textBacklog } from "./sql/text-backlog.js";
export type { TextBacklog } from "./sql/text-backlog.js";
export { refuseControlCharacters } from "./text-input.js";
export { AWAITS_CONFIRMATION, IN_FLIGHT_STATES, NEEDS_ADDRESS, PARKED, UNCONFIRMED } from "./transitions.js";
export { JOB_STATES, RECIPIENT_STATES, SMALL_DOCUMENT_BYTES } from "./types.js";
export type {
  CoverSpec,
  Job,
  JobEvent,
  JobFilter,
  JobMeta,
  JobSource,
  LeftOut,
  NewDocument,
  NewJob,
  NewRecipient,
  Notification,
  Recipient,
  RecipientState,
  StoredDocument,
} from "./types.js";
