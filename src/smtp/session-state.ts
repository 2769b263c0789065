// One SMTP session's record: who it is, what it asked for, and its part of the tap's bookkeeping.
// The session's logger is bound to the session id and client address, so every line of one
// connection can be found; it and each mail's logger are deferred children (log/): most sessions
// of a busy relay write one line a mail, and a pino child per connection and per mail was a cost
// of every one.
import type { EnvelopeRecipient } from "../intake/index.js";
import type { UserConfig } from "../config/index.js";
import { deferredChild, type Logger } from "../log/index.js";
import type { RecipientTarget } from "./recipient-address.js";
import type { TapState } from "./session-tap.js";

export class SessionState implements TapState {
  user?: UserConfig;
  /** neither trusted nor authenticated: its sender is a claim until DATA proves it (set at MAIL FROM) */
  stranger = false;
  recipients = new Map<string, EnvelopeRecipient>();
  /**
   * A stranger's recipients, held unread until DATA proves its claimed user: a contact name or
   * the user's own rules are the user's, and are not looked at on a claim's word.
   */
  held = new Map<string, { address: string; target: RecipientTarget }>();
  rateStrikes = 0;
  authFailures = 0;
  lastCommand = "";
  junk = 0;
  private logger?: Logger;

  constructor(
    private readonly parentLog: Logger,
    readonly id: string,
    /** the client address this session counts against */
    readonly client: string,
    /** the session came from trustedNetworks (decided once, at connect) */
    readonly trusted: boolean,
    /** holds a slot (admitted at connect), released at close */
    readonly admitted: boolean,
    public since: number,
  ) {}

  get log(): Logger {
    this.logger ??= deferredChild(this.parentLog, { session: this.id, remote: this.client });
    return this.logger;
  }

  /** The lines of one mail from `user`. */
  mailLog(user: string): Logger {
    return deferredChild(this.log, { user });
  }
}
