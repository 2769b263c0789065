// What a connector's try came to when it did not deliver, in words a person reads on the fax's
// page and in the owner's alert ("401 from the FHIR server"): one classifier for every connector,
// temporary (tried again later) or final (a person must act), never the fax's content.
import { FaxgateError } from "../errors.js";

/** A try that did not deliver: temporary ones are tried again, the others fail the delivery. */
export function unavailable(words: string, cause?: unknown): FaxgateError {
  return new FaxgateError("CONNECTOR_UNAVAILABLE", words, cause === undefined ? {} : { cause });
}

export function refused(words: string, cause?: unknown): FaxgateError {
  return new FaxgateError("CONNECTOR_REFUSED", words, cause === undefined ? {} : { cause });
}

/** An HTTP status as the problem it is: 408, 425, 429 and 5xx pass; other 4xx and 3xx need a person. */
export function statusProblem(status: number, peer: string): FaxgateError {
  const words = `${status} from the ${peer}`;
  if (status === 408 || status === 425 || status === 429 || status >= 500) return unavailable(words);
  if (status >= 300 && status < 400)
    return refused(`${words}: a redirect, refused (the connector goes only to the host it names)`);
  return refused(words);
}

const CERT_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS_CERT_ALTNAME/;

/** A network failure (no answer, refused connection, a certificate not trusted) in words. */
export function networkProblem(err: unknown, peer: string): FaxgateError {
  if (err instanceof FaxgateError) return err;
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e.code ?? e.cause?.code ?? e.name ?? "error";
  if (CERT_CODES.test(code))
    return refused(`the ${peer}'s certificate is not trusted (${code}); name its CA in caFile`, err);
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "TimeoutError")
    return unavailable(`the ${peer} did not answer in time`, err);
  return unavailable(`the ${peer} could not be reached (${code})`, err);
}

/** Whether a problem passes by itself (tried again) or needs a person (failed now). */
export const isTemporary = (err: unknown): boolean => !(err instanceof FaxgateError) || err.temporary;
