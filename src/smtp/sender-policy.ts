// Who may hand us mail: a configured user's address as envelope sender, either from a trusted
// network (a relay that already authenticated its users) or after SMTP AUTH as that very user.
import { isLoopback, type UserIndex } from "../auth/index.js";
import type { SmtpConfig, UserConfig } from "../config/index.js";
import type { FaxgateError } from "../errors.js";
import { refuse } from "./smtp-reply.js";

export type SenderDecision = { ok: true; user: UserConfig } | { ok: false; refusal: FaxgateError };

/** AUTH sends a password: only over TLS, or over loopback where nobody can listen in. */
export function authAllowed(mode: SmtpConfig["auth"], session: { secure: boolean; remoteAddress?: string }): boolean {
  if (mode === "off") return false;
  return session.secure || isLoopback(session.remoteAddress);
}

export interface SenderContext {
  address: string;
  /** Config user name after a successful AUTH. */
  authenticatedAs?: string;
  trusted: boolean;
  /** smtp.senderAuth is verify: a stranger may send, and proves its sender with the message */
  provable?: boolean;
  authMode: SmtpConfig["auth"];
  /** AUTH is on offer in this session (TLS or loopback). */
  authOffered: boolean;
}

export function decideSender(index: UserIndex, ctx: SenderContext): SenderDecision {
  const shown =
    ctx.address === "" ? "<>" : `<${ctx.address.length > 80 ? `${ctx.address.slice(0, 77)}...` : ctx.address}>`;
  const user = ctx.address === "" ? undefined : index.byEmail(ctx.address);
  if (!user && ctx.address !== "" && index.hasLeft(ctx.address))
    return {
      ok: false,
      refusal: refuse(
        "SENDER_NOT_ALLOWED",
        `Sender ${shown} has left: the directory ended their access to this fax gateway`,
      ),
    };
  if (!user)
    return { ok: false, refusal: refuse("SENDER_NOT_ALLOWED", `Sender ${shown} is not a user of this fax gateway`) };
  if (ctx.authenticatedAs !== undefined) {
    if (ctx.authenticatedAs !== user.name) {
      return {
        ok: false,
        refusal: refuse(
          "SENDER_NOT_ALLOWED",
          `Authenticated as ${ctx.authenticatedAs}, you may only send as yourself, not as ${shown}`,
        ),
      };
    }
    return { ok: true, user };
  }
  if (ctx.authMode === "required") {
    return {
      ok: false,
      refusal: refuse("AUTH_REQUIRED", `Authentication required${ctx.authOffered ? "" : " (use STARTTLS, then AUTH)"}`),
    };
  }
  if (!ctx.trusted && !ctx.provable) {
    const how =
      ctx.authMode === "off"
        ? "mail is only taken from trusted networks"
        : ctx.authOffered
          ? "authenticate first (AUTH)"
          : "use STARTTLS and authenticate first";
    return {
      ok: false,
      refusal: refuse("SENDER_NOT_ALLOWED", `Sender ${shown} is not allowed from this address: ${how}`),
    };
  }
  return { ok: true, user };
}
