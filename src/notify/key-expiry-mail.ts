// A warning that the user's API key for the fax service is about to expire. Without a key the
// gateway cannot send their faxes, so it always goes out, to the user and the admin copy.
import { FOOTER, type ComposedMail } from "./composed-mail.js";
import type { KeyExpiryPayload } from "../store/index.js";
import { formatTime } from "./time-format.js";

// the fields are still checked: rows written by older versions may lack some
export function composeKeyExpiry(payload: Partial<KeyExpiryPayload>, timeZone: string): ComposedMail {
  const keyName = typeof payload.keyName === "string" ? payload.keyName : "the gateway key";
  const expiresAt = typeof payload.expiresAt === "string" ? payload.expiresAt : null;
  const when = formatTime(expiresAt, timeZone) ?? "soon";
  return {
    subject: `Fax gateway: API key "${keyName}" expires ${expiresAt ? `on ${when}` : "soon"}`,
    blocks: [
      {
        kind: "para",
        text: `The fax service API key "${keyName}" that the fax gateway uses for you expires ${expiresAt ? `on ${when}` : "soon"}. After that, your faxes cannot be sent until the key is replaced.`,
      },
      {
        kind: "para",
        text: "There is nothing for you to do: the gateway replaces the key itself when it holds an admin key, otherwise your fax gateway administrator does. If your faxes stop going out after that date, tell your administrator.",
      },
      { kind: "para", text: FOOTER },
    ],
    failure: true,
    mandatory: true,
  };
}
