// The face of config/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export type { FhirDelivery, GraphDelivery, Hl7Delivery, SmbDelivery, WebdavDelivery } from "./connectors.js";
export { DESTINATION_CATEGORIES } from "./destination-categories.js";
export { directorySyncMs } from "./directory.js";
export type { DirectoryConfig, LdapConfig, ScimConfig } from "./directory.js";
export { parseHostPort } from "./host-port.js";
export { outboxDir, validateConfig } from "./load.js";
export { restartNoteKey, restartOnlyChanges } from "./restart-needed.js";
export type { RestartNote } from "./restart-needed.js";
export { oldRetentionKeysWarning } from "./retention.js";
export type { RetentionConfig } from "./retention.js";
export { riskySettings } from "./risky-settings.js";
export {
  addressWaitMs,
  consoleApiShare,
  minFreeMb,
  preferenceRefreshMs,
  senderAuthOff,
  smtpSettings,
} from "./schema.js";
export type {
  ApiConfig,
  Config,
  DnsConfig,
  InboundConfig,
  InboundDelivery,
  InboundRoute,
  MailBodyMode,
  MailboxConfig,
  NotifyConfig,
  PartialMode,
  QueueConfig,
  SenderAuthConfig,
  SmtpConfig,
  SpoolConfig,
  UserConfig,
  WebConfig,
  WebhooksConfig,
} from "./schema.js";
export { readSecretsFile } from "./secrets-file.js";
export { maskUrl } from "./url-secrets.js";
