// The face of intake/: what other folders may use of it, re-exported from the files that define it.
// Written by scripts/rooms-codemod.mjs from what other folders import (node scripts/rooms-codemod.mjs);
// other folders import from here, never from an inner file (test/shared/module-graph.test.ts).
export { addressWaiting } from "./address-waiting.js";
export { ConfirmExpiry } from "./confirm-expiry.js";
export { confirmsNewDestinations } from "./confirm-new.js";
export { MailDoor } from "./mail-door.js";
export type { Vetted } from "./mail-door.js";
export type { EnvelopeRecipient } from "./mail/mail-to-job.js";
export { acceptForm, newFaxDocuments, newFaxRecipients } from "./new-fax.js";
export { ConvertQueue } from "./office/convert-queue.js";
export type { DocumentConverter } from "./office/convert-queue.js";
export { OfficeConverter } from "./office/office-convert.js";
export type { OfficeOptions } from "./office/office-convert.js";
export { isPrintRefusal, PrintDoor } from "./print-door.js";
export type { PrintAccepted, PrintFile, PrintRoute } from "./print-door.js";
export { parseTicket, TICKET_MAX_BYTES } from "./print/ticket.js";
export { BUSY_RETRY_SECONDS, QueuePressure } from "./queue-pressure.js";
export { ReaderPool } from "./reader-pool.js";
export type { InputReaders } from "./reader-pool.js";
