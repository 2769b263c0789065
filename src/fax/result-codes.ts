// Fax results as the service reports them, and what they mean to us. The emulator produces
// these, the dispatcher decides on retries with them, and notifications put them in plain words.

export interface FaxResultMeaning {
  resultCode: string;
  resultInfo: string;
  errorCode: string | null;
  errorInfo: string | null;
  /** Plain words for people: "busy", "no answer". */
  words: string;
  /** Worth another try later (busy, no answer), up to queue.maxFaxTries. */
  retryable: boolean;
}

export const FAX_RESULTS = {
  ok: { resultCode: '0', resultInfo: 'OK', errorCode: null, errorInfo: null, words: 'delivered', retryable: false },
  busy: { resultCode: '17', resultInfo: 'Line busy', errorCode: 'BUSY', errorInfo: 'The remote line was busy', words: 'busy', retryable: true },
  noAnswer: { resultCode: '18', resultInfo: 'No answer', errorCode: 'NO_ANSWER', errorInfo: 'The remote side did not answer', words: 'no answer', retryable: true },
  noFaxTone: { resultCode: '49', resultInfo: 'No fax tone', errorCode: 'NO_FAX_TONE', errorInfo: 'A voice line answered: no fax tone was detected', words: 'no fax machine answered (a voice line or wrong number)', retryable: false },
  attemptFailed: { resultCode: '50', resultInfo: 'Transmission error', errorCode: 'TRANSMISSION_ERROR', errorInfo: 'The call dropped during the transmission', words: 'the call dropped during the transmission', retryable: true },
} as const satisfies Record<string, FaxResultMeaning>;

/** Looks a service result up by its codes; unknown failures are reported with the service's own text. */
export function explainResult(fields: { resultCode?: string | null; resultInfo?: string | null; errorCode?: string | null; errorInfo?: string | null }): FaxResultMeaning {
  const known = Object.values(FAX_RESULTS).find(
    (r) => (fields.errorCode && r.errorCode === fields.errorCode) || (!fields.errorCode && fields.resultCode != null && r.resultCode === fields.resultCode),
  );
  if (known) return known;
  const info = fields.errorInfo || fields.resultInfo || 'the fax service reported a failure';
  return {
    resultCode: fields.resultCode ?? '',
    resultInfo: fields.resultInfo ?? '',
    errorCode: fields.errorCode ?? null,
    errorInfo: fields.errorInfo ?? null,
    words: info.toLowerCase(),
    retryable: false,
  };
}
