// The names of the destination policy's built-in categories: the config schema validates them,
// recipients/destination-policy.ts decides what each covers.
/** Built-in classes of numbers a fax gateway has no business dialling, refused by default. */
export const DESTINATION_CATEGORIES = [
  "premium-rate",
  "shared-cost",
  "personal-number",
  "voicemail",
  "pager",
  "international-network",
  "emergency",
] as const;
