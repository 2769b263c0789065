// smtp-server reports each command it reads and each reply it sends to its `logger` option (a
// bunyan-style logger: records with tnx 'command' and the command's name, tnx 'send' and the reply
// line). That documented option is where the receiver hears of both, without reaching into
// smtp-server's connections: it counts replies for the metrics, and bounds "junk" commands per
// session (NOOP, RSET, VRFY, HELP between two messages, as Postfix's smtpd_junk_command_limit), which
// smtp-server does not: a client that only sends NOOP could otherwise hold a connection slot forever.
// The cut is a 421 through the connection's public send(), which makes smtp-server close it.
// test/smtp/limits.test.ts and test/faults/smtp-abuse.test.ts fail if smtp-server's records change.
import type { SMTPServer } from "smtp-server";

/** A reply to count: an error, or the 250 that accepted a MAIL, RCPT or message. */
export type ReplyHook = (code: number) => void;

const JUNK = new Set(["NOOP", "RSET", "VRFY", "HELP"]);
const COUNTED_OK = new Set(["MAIL", "RCPT", "DATA"]);
const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;

interface Record_ {
  tnx?: unknown;
  cid?: unknown;
  command?: unknown;
}

export class SessionTap {
  private readonly junk = new Map<string, number>();
  /** each session's last command, which a reply answers */
  private readonly last = new Map<string, string>();
  private server: SMTPServer | null = null;

  constructor(
    private readonly maxJunkCommands: number | undefined,
    private readonly onReply: ReplyHook,
  ) {}

  /** The logger to give smtp-server (its `logger` option). */
  logger(): Record<(typeof LEVELS)[number], (...args: unknown[]) => void> {
    const hear = (entry: unknown, _message?: unknown, line?: unknown): void => this.heard(entry as Record_, line);
    return Object.fromEntries(LEVELS.map((l) => [l, hear])) as Record<
      (typeof LEVELS)[number],
      (...args: unknown[]) => void
    >;
  }

  /** The server whose connections a 421 goes to (set once it is made). */
  attach(server: SMTPServer): void {
    this.server = server;
  }

  /** A message was accepted in this session: the client does real work, its allowance starts again. */
  accepted(sessionId: string): void {
    this.junk.delete(sessionId);
  }

  closed(sessionId: string): void {
    this.junk.delete(sessionId);
    this.last.delete(sessionId);
  }

  private heard(entry: Record_, line: unknown): void {
    if (entry?.tnx === "send") {
      const code = typeof line === "string" ? Number(line.slice(0, 3)) : NaN;
      const command = typeof entry.cid === "string" ? this.last.get(entry.cid) : undefined;
      if (code >= 400 || (code === 250 && command !== undefined && COUNTED_OK.has(command))) {
        try {
          this.onReply(code);
        } catch {
          // metrics never break a session
        }
      }
      return;
    }
    if (entry?.tnx !== "command" || typeof entry.cid !== "string") return;
    const name = typeof entry.command === "string" ? entry.command.toUpperCase() : "";
    this.last.set(entry.cid, name);
    if (!JUNK.has(name) || this.maxJunkCommands === undefined) return;
    const n = (this.junk.get(entry.cid) ?? 0) + 1;
    this.junk.set(entry.cid, n);
    if (n <= this.maxJunkCommands) return;
    for (const conn of this.server?.connections ?? []) {
      // 421 makes smtp-server close the connection; the command's own reply is then not sent
      if (conn.id === entry.cid)
        conn.send(421, "4.7.0 Too many NOOP, RSET, VRFY or HELP commands without a message, closing");
    }
  }
}
