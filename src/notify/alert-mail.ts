// Something the gateway cannot settle alone and a person must look at: a user's API key refused
// by the service (faxes held), or a send whose outcome could not be decided (parked, never sent
// twice). It always goes out, to the user and the admin copy, like a key-expiry warning.
import type { AlertPayload } from "../store/index.js";
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";

export function composeAlert(payload: AlertPayload): ComposedMail {
  const subject =
    typeof payload.subject === "string" && payload.subject ? payload.subject : "the fax gateway needs attention";
  const text = typeof payload.text === "string" ? payload.text : subject;
  const action = typeof payload.action === "string" ? payload.action : null;
  return {
    subject: clip(`Fax gateway: ${subject}`, 120),
    blocks: [
      { kind: "para", text },
      ...(action ? [{ kind: "para" as const, text: action }] : []),
      { kind: "para", text: FOOTER },
    ],
    failure: true,
    mandatory: true,
  };
}
