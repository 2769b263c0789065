// Whether a claimed send's call left (recipients.call_left; written by sql/leases.ts markCallLeaving).
/**
 * The schema step (issue 55) that adds call_left (rows.ts): nullable, so that a gateway of the
 * version before, which neither writes nor reads it, keeps working beside one that does (its
 * claims stay NULL, and NULL is read as "may have left": looked up, never resent blindly).
 */
export const CALL_LEFT_STEP = "ALTER TABLE recipients ADD COLUMN call_left INTEGER;";
