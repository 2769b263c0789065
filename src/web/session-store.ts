// Where the console's sessions are kept, behind the few calls @fastify/session and the console
// need. The memory store is today's: a restart ends every session. A store shared by a fleet of
// gateways (the queue's database) implements this same interface and is handed to WebConsole by
// the composition root instead (src/parts/http-listeners.ts); the rules on top (lifetime, idle
// time, who may keep a session) stay in sessions.ts.

/** One signed-in session as kept. Times are milliseconds since the epoch, by the console's clock. */
export interface SessionRecord {
  user: string;
  admin: boolean;
  /** @fastify/csrf-protection's per-session secret; tokens are checked against it */
  csrfSecret: string;
  /** the token handed out at sign-in (and again by GET /api/session) */
  csrfToken: string;
  signedInAt: number;
  /** the last request that used the session (for web.idleTimeout) */
  seenAt: number;
}

export interface SessionStore {
  get(id: string): Promise<SessionRecord | null>;
  set(id: string, record: SessionRecord): Promise<void>;
  destroy(id: string): Promise<void>;
  /** Every session kept: to end those of removed users and to clear out expired ones. */
  list(): Promise<Array<{ id: string; record: SessionRecord }>>;
}

// bounded memory: past this many sessions the oldest go first
const MAX_SESSIONS = 10_000;

export class MemorySessionStore implements SessionStore {
  private readonly byId = new Map<string, SessionRecord>();

  async get(id: string): Promise<SessionRecord | null> {
    return this.byId.get(id) ?? null;
  }

  async set(id: string, record: SessionRecord): Promise<void> {
    this.byId.set(id, { ...record });
    while (this.byId.size > MAX_SESSIONS) this.byId.delete(this.byId.keys().next().value!);
  }

  async destroy(id: string): Promise<void> {
    this.byId.delete(id);
  }

  async list(): Promise<Array<{ id: string; record: SessionRecord }>> {
    return [...this.byId].map(([id, record]) => ({ id, record }));
  }
}
