// Plain words for a fax result, for notifications. The meaning of a result lives in
// ./result-rules.ts (the one vocabulary); this file only turns it into the shape the mail
// composers read.
import { explainFailure, type ResultFields } from "./result-rules.js";

export interface FaxResultMeaning {
  /** Plain words for people: "busy", "no answer", or the service's own words quoted. */
  words: string;
  /** Worth another try later (busy, no answer, results no rule knows). */
  retryable: boolean;
}

/**
 * The first emulator's results, kept only while the emulator still reads them (it is becoming an
 * independent model of the service with its own table). The product never decides by this table.
 */
export const FAX_RESULTS = {
  ok: { resultCode: "0", resultInfo: "OK", errorCode: null, errorInfo: null, words: "delivered", retryable: false },
  busy: {
    resultCode: "17",
    resultInfo: "Line busy",
    errorCode: "BUSY",
    errorInfo: "The remote line was busy",
    words: "busy",
    retryable: true,
  },
  noAnswer: {
    resultCode: "18",
    resultInfo: "No answer",
    errorCode: "NO_ANSWER",
    errorInfo: "The remote side did not answer",
    words: "no answer",
    retryable: true,
  },
  noFaxTone: {
    resultCode: "49",
    resultInfo: "No fax tone",
    errorCode: "NO_FAX_TONE",
    errorInfo: "A voice line answered: no fax tone was detected",
    words: "no fax machine answered (a voice line or wrong number)",
    retryable: false,
  },
  attemptFailed: {
    resultCode: "50",
    resultInfo: "Transmission error",
    errorCode: "TRANSMISSION_ERROR",
    errorInfo: "The call dropped during the transmission",
    words: "the call dropped during the transmission",
    retryable: true,
  },
} as const;

/** A failed result in plain words (built-in rules; operator rules apply in the dispatcher's reason). */
export function explainResult(fields: ResultFields): FaxResultMeaning {
  const m = explainFailure(fields);
  // A result no rule knows is told in the service's own words, as it said them.
  const own = (fields.errorInfo || fields.resultInfo || "").trim();
  return { words: m.rule === null && own ? own : m.words, retryable: m.action === "retry" };
}
