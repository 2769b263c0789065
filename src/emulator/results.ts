// The results the emulated service reports, in the real service's own 4-digit family (public
// evidence: 6100 "Fax Number Busy", 6000 "Fax Connect Failed", 5100 "Fax Request Blocked",
// 5200 "Fax Rendering Issue"; the full list is not public, so no answer and no fax tone use codes
// of the same family that we chose). The destination's last four digits pick one; docs/emulator.md
// lists them. Deliberately independent of the product's own table of results.

export interface EmulatedResult {
  /** the status the fax ends in */
  status: "success" | "failed" | "cancelled";
  resultCode: string | null;
  resultInfo: string | null;
  errorCode: string | null;
  errorInfo: string | null;
  /** which attempt the outcome came on */
  faxAttempt: number;
  /** seconds of line time the call took */
  duration: (pages: number) => number;
}

const failed = (code: string | null, info: string | null, seconds = 0): EmulatedResult => ({
  status: "failed",
  resultCode: code,
  resultInfo: info,
  errorCode: code,
  errorInfo: info,
  faxAttempt: 1,
  duration: () => seconds,
});

// about 25 s a page at 14400 bps, plus call set-up
const sent = (pages: number): number => 12 + 25 * pages;

export const RESULTS = {
  ok: {
    status: "success",
    resultCode: "0",
    resultInfo: "OK",
    errorCode: "0",
    errorInfo: null,
    faxAttempt: 1,
    duration: sent,
  },
  // a whole failed call (busy) before the second try
  secondAttempt: {
    status: "success",
    resultCode: "0",
    resultInfo: "OK",
    errorCode: "0",
    errorInfo: null,
    faxAttempt: 2,
    duration: (p: number) => sent(p) + 45,
  },
  busy: failed("6100", "Fax Number Busy"),
  noAnswer: failed("6200", "Fax No Answer", 60),
  noFaxTone: failed("6300", "No Fax Tone Detected", 35),
  connectFailed: failed("6000", "Fax Connect Failed", 5),
  blocked: failed("5100", "Fax Request Blocked"),
  rendering: failed("5200", "Fax Rendering Issue"),
  // a code and text no client has seen: tests that an unknown failure is reported as it came
  unknownCode: failed("7734", "Carrier Route Withdrawn", 20),
  // a failure that carries no code or text at all
  noCode: failed(null, null),
  // the service gave up on the fax itself
  cancelled: {
    status: "cancelled",
    resultCode: null,
    resultInfo: null,
    errorCode: null,
    errorInfo: null,
    faxAttempt: 0,
    duration: () => 0,
  },
} as const satisfies Record<string, EmulatedResult>;

export type OutcomeRule = keyof typeof RESULTS;

/** The destination's last four digits decide what happens to a fax sent there. */
/**
 * A line that is busy at first and free later: the first outbound fax of an account to such a
 * number is busy, every later one is delivered (a client's own retry of a busy line succeeds).
 */
export type EndingRule = OutcomeRule | "busyOnce";

export const ENDINGS: Readonly<Record<string, EndingRule>> = {
  "0000": "busy",
  "0001": "noAnswer",
  "0002": "noFaxTone",
  "0003": "secondAttempt",
  "0004": "connectFailed",
  "0005": "blocked",
  "0006": "rendering",
  "0007": "unknownCode",
  "0008": "noCode",
  "0009": "cancelled",
  "0010": "busyOnce",
};

export function outcomeRuleFor(faxNumber: string): EndingRule {
  const last4 = faxNumber.replace(/\D/g, "").slice(-4);
  return ENDINGS[last4] ?? "ok";
}

/** A stored rule name back to its result; rows written by older versions fall back sensibly. */
export function resultOf(rule: string): EmulatedResult {
  return (RESULTS as Record<string, EmulatedResult>)[rule] ?? RESULTS.ok;
}
