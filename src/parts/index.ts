// The face of parts/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { createAdmin } from "./admin.js";
export type { ServiceEndpoint } from "./api.js";
export { createDeliveries } from "./connectors.js";
export { createConverters } from "./converters.js";
export { createCore } from "./core.js";
export type { Core, RunningAddresses } from "./core.js";
export { dataFolderParts, holdDataFolder, openDataFolder } from "./data-folder.js";
export { createDirectory } from "./directory.js";
export type { DirectoryParts } from "./directory.js";
export { createDispatcher } from "./dispatch.js";
export { registerGatewayGauges } from "./gauges.js";
export { consoleUrl, createHttpListeners } from "./http-listeners.js";
export { createKeyWatch } from "./keys.js";
export { ledgerSealPart } from "./ledger.js";
export { createMailDoor } from "./mail-door.js";
export { createMailboxes } from "./mailboxes.js";
export { createNotify } from "./notify.js";
export { createOcr } from "./ocr.js";
export { partChecks, startParts, stopParts } from "./part.js";
export type { Part } from "./part.js";
export { createRetention } from "./retention.js";
export { createSmtp } from "./smtp.js";
export { createSpool } from "./spool.js";
