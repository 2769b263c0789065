// What the receiver does with each command and reply of a session, through smtp-server's
// onCommand and onReply handlers (patches/smtp-server+exact-enhanced-codes.patch, proposed
// upstream: docs/dependencies.md). It counts replies for the metrics, bounds "junk" commands per
// session (NOOP, RSET, VRFY, HELP between two messages, as Postfix's smtpd_junk_command_limit),
// which smtp-server does not, and ends a session that has had no message accepted for
// smtp.idleSessionTimeout (issue 36 item 5): NOOPs reset smtp-server's socket timeout, so without it a
// client could hold a slot for maxJunkCommands times smtp.socketTimeout. The life is checked at each
// command rather than by a timer per session: a client that sends nothing meets the socket
// timeout, so a slot is held at most idleSessionTimeout plus socketTimeout.
// The state lives in the session's own record (session-state.ts): no map, no timer per session.
import type { Clock } from "../clock.js";

/** A reply to count: an error, or the 250 that accepted a MAIL, RCPT or message. */
export type ReplyHook = (code: number) => void;

/** A session's part of the tap's bookkeeping. */
export interface TapState {
  /** the last command read, which the next reply answers */
  lastCommand: string;
  /** junk commands since the last message accepted */
  junk: number;
  /** when the session began or last had a message accepted (clock ms) */
  since: number;
}

/** Why a command ends the session, and the 421 that says so. */
export interface Cut {
  why: "junk" | "idle";
  reply: string;
}

const JUNK = new Set(["NOOP", "RSET", "VRFY", "HELP"]);
const COUNTED_OK = new Set(["MAIL", "RCPT", "DATA"]);

export class SessionTap {
  constructor(
    private readonly limits: { maxJunkCommands: number | undefined; idleSessionMs: number },
    private readonly clock: Clock,
    private readonly onReply: ReplyHook,
  ) {}

  /** A command is about to run: undefined when it may, else the cut that ends the session. */
  command(st: TapState, name: string): Cut | undefined {
    st.lastCommand = name;
    if (this.clock.now() - st.since >= this.limits.idleSessionMs) {
      const s = Math.round(this.limits.idleSessionMs / 1000);
      return { why: "idle", reply: `421 4.4.2 No message in ${s} s, closing the session` };
    }
    if (!JUNK.has(name) || this.limits.maxJunkCommands === undefined) return undefined;
    st.junk += 1;
    if (st.junk <= this.limits.maxJunkCommands) return undefined;
    return { why: "junk", reply: "421 4.7.0 Too many NOOP, RSET, VRFY or HELP commands without a message, closing" };
  }

  /** smtp-server sent a reply in this session. */
  reply(st: TapState | undefined, code: number): void {
    if (code < 400 && !(code === 250 && st !== undefined && COUNTED_OK.has(st.lastCommand))) return;
    try {
      this.onReply(code);
    } catch {
      // metrics never break a session
    }
  }

  /** A message was accepted: the client does real work, its allowance and life start again. */
  accepted(st: TapState): void {
    st.junk = 0;
    st.since = this.clock.now();
  }
}
