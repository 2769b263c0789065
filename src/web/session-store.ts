// Where the console's sessions are kept, behind the few calls @fastify/session and the console
// need. The daemon keeps them in the queue's database (StoredSessionStore): a restart ends none,
// and every gateway of a fleet on one PostgreSQL serves any request of a signed-in person. The
// memory store is for a console without a store of its own (tests of the rules). The rules on
// top (lifetime, idle time, who may keep a session) stay in sessions.ts.
import { type Db, deleteSession, getSession, listSessions, putSession, sessionKey } from "../store/index.js";

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
  /** `id`: a session's id, or a handle `list` gave */
  destroy(id: string): Promise<void>;
  /**
   * Every session kept: to end those of removed users and to clear out expired ones. An id here
   * may be the store's own handle rather than the session's id: good for `destroy`, nothing else.
   */
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

// a handle of list(): never shaped like a session id (those are base64url), so no cookie is one
const HANDLE = "#";

/**
 * Sessions in the queue's database (store/sql/shared-state.ts), kept under their id's SHA-256:
 * someone who reads the table (a backup, a replica) cannot sign in with what is there.
 */
export class StoredSessionStore implements SessionStore {
  constructor(private readonly db: Db) {}

  get(id: string): Promise<SessionRecord | null> {
    return getSession(this.db, sessionKey(id));
  }

  set(id: string, record: SessionRecord): Promise<void> {
    return putSession(this.db, sessionKey(id), record);
  }

  destroy(id: string): Promise<void> {
    return deleteSession(this.db, id.startsWith(HANDLE) ? id.slice(HANDLE.length) : sessionKey(id));
  }

  async list(): Promise<Array<{ id: string; record: SessionRecord }>> {
    return (await listSessions(this.db)).map(({ key, session }) => ({ id: HANDLE + key, record: session }));
  }
}
