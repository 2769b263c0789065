// The service's documented limits, checked before any request goes out, so that a job which can
// never be accepted fails at once with a message naming the field (and no request is spent).
import { FaxgateError } from "../errors.js";

export const LIMITS = {
  keyName: 128,
  recipientName: 40,
  senderName: 40,
  subject: 55,
  callerId: 10,
  notes: 4000,
  historyLimit: 500,
} as const;

/** Characters as a person counts them (code points), not UTF-16 units. */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export function checkLength(field: string, value: string | undefined, max: number): void {
  if (value === undefined || value === null) return;
  const n = charCount(value);
  if (n > max) {
    throw new FaxgateError("API_LIMIT", `${field} is ${n} characters; the fax service allows at most ${max}`, {
      field,
    });
  }
}

export function checkCoverFields(f: {
  recipientName?: string;
  senderName?: string;
  subject?: string;
  callerId?: string;
  notes?: string;
}): void {
  checkLength("recipientName", f.recipientName, LIMITS.recipientName);
  checkLength("senderName", f.senderName, LIMITS.senderName);
  checkLength("subject", f.subject, LIMITS.subject);
  checkLength("callerId", f.callerId, LIMITS.callerId);
  checkLength("notes", f.notes, LIMITS.notes);
}

export function checkHistoryLimit(limit: number | undefined): void {
  if (limit === undefined) return;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new FaxgateError("API_INVALID_INPUT", `limit must be a whole number of at least 1 (got ${limit})`, {
      field: "limit",
    });
  }
  if (limit > LIMITS.historyLimit) {
    throw new FaxgateError(
      "API_LIMIT",
      `limit is ${limit}; the fax service returns at most ${LIMITS.historyLimit} records per call`,
      { field: "limit" },
    );
  }
}

export function requireField(field: string, value: unknown): void {
  const missing =
    value === undefined ||
    value === null ||
    (typeof value === "string" && value.trim() === "") ||
    (Array.isArray(value) && value.length === 0);
  if (missing) throw new FaxgateError("API_INVALID_INPUT", `${field} is required`, { field });
}

export function checkOffset(offset: number | undefined): void {
  if (offset === undefined) return;
  if (!Number.isInteger(offset) || offset < 0) {
    throw new FaxgateError("API_INVALID_INPUT", `offset must be a whole number of at least 0 (got ${offset})`, {
      field: "offset",
    });
  }
}
