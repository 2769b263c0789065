// The emulator's own vocabulary of the service: access levels and response variants. Kept here,
// not borrowed from the product's fax client, so the emulator stays an independent model of the
// real service that the product is tested against.
export type AccessLevel = "admin" | "base" | "print_driver";
export const ACCESS_LEVELS: readonly AccessLevel[] = ["admin", "base", "print_driver"];

/** Which of the two documented response shapes the emulator answers in. */
export type ApiVariant = "a" | "b";

/** Fax statuses the real service is seen to use. */
export type FaxStatus = "scheduled" | "processing" | "transmitting" | "success" | "failed" | "cancelled";
export const FAX_STATUSES: readonly FaxStatus[] = [
  "scheduled",
  "processing",
  "transmitting",
  "success",
  "failed",
  "cancelled",
];
