// Server-side sessions of the console: a random id in an httpOnly cookie names a session kept in
// memory, with its user, its CSRF token and an expiry. Nothing about the user travels in the
// cookie, so signing out or a restart ends every session at once.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../clock.js";

export interface Session {
  id: string;
  user: string;
  admin: boolean;
  csrfToken: string;
  expiresAt: number;
}

const MAX_SESSIONS = 10_000;

export class Sessions {
  private readonly byId = new Map<string, Session>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  create(user: string, admin: boolean): Session {
    this.sweep();
    const s: Session = {
      id: randomBytes(32).toString("base64url"),
      user,
      admin,
      csrfToken: randomBytes(32).toString("base64url"),
      expiresAt: this.clock.now() + this.ttlMs,
    };
    this.byId.set(s.id, s);
    // bounded memory: the oldest sessions go first
    while (this.byId.size > MAX_SESSIONS) this.byId.delete(this.byId.keys().next().value!);
    return s;
  }

  get(id: string | undefined): Session | null {
    if (!id) return null;
    const s = this.byId.get(id);
    if (!s) return null;
    if (s.expiresAt <= this.clock.now()) {
      this.byId.delete(id);
      return null;
    }
    return s;
  }

  end(id: string): void {
    this.byId.delete(id);
  }

  /** Ends the sessions of users no longer configured (or whose role changed), after a reload. */
  keepOnly(valid: (s: Session) => boolean): void {
    for (const [id, s] of this.byId) if (!valid(s)) this.byId.delete(id);
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [id, s] of this.byId) if (s.expiresAt <= now) this.byId.delete(id);
  }
}

/** Compares two tokens in constant time (length leaks nothing: both are fixed-size here). */
export function sameToken(a: string | undefined, b: string): boolean {
  if (typeof a !== "string") return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}
