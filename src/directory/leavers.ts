// Who has left (issue 50 point 3): people the directory listed and lists no more (removed or
// disabled in LDAP, `active:false` or deleted over SCIM). The doors refuse them saying "has left",
// not "not a user", so the person and the help desk know why at once. Kept in the store's state
// (a restart, and every gateway of a fleet, know them too); someone listed again is no leaver.
import type { DirectoryPerson } from "./person.js";

export interface LeaversStore {
  getState(key: string): Promise<string | null>;
  setState(key: string, value: string): Promise<void>;
}

export const LEAVERS_KEY = "directory:left";

/** A leaver as kept: their name and addresses, and when they were first seen gone. */
export interface Leaver {
  name: string;
  addresses: string[];
  at: string;
}

export class Leavers {
  private byName = new Map<string, Leaver>();
  /** name or address, lower case -> the leaver's name */
  private byLogin = new Map<string, string>();
  /** the directory's people as last applied; null until the first apply (no leavers from it) */
  private last: readonly DirectoryPerson[] | null = null;

  constructor(private readonly store: LeaversStore) {}

  async load(): Promise<void> {
    const raw = await this.store.getState(LEAVERS_KEY);
    const list = raw ? (JSON.parse(raw) as Leaver[]) : [];
    this.index(list);
  }

  /**
   * The directory's list applied now: whom it no longer lists has left; whom it (or `users:`)
   * lists again has not. `kept`: names still people of the gateway (the config's users).
   */
  async update(people: readonly DirectoryPerson[], kept: readonly string[], at: Date): Promise<Leaver[]> {
    const now = new Set([...people.map((p) => p.name.toLowerCase()), ...kept.map((n) => n.toLowerCase())]);
    const next = new Map([...this.byName].filter(([k]) => !now.has(k)));
    const gone: Leaver[] = [];
    for (const p of this.last ?? [])
      if (!now.has(p.name.toLowerCase()) && !next.has(p.name.toLowerCase())) {
        const l = { name: p.name, addresses: [p.email, ...p.aliases], at: at.toISOString() };
        next.set(p.name.toLowerCase(), l);
        gone.push(l);
      }
    this.last = people;
    if (next.size !== this.byName.size || gone.length > 0) {
      await this.store.setState(LEAVERS_KEY, JSON.stringify([...next.values()]));
      this.index([...next.values()]);
    }
    return gone;
  }

  /** The leaver a name or address belongs to, or null. */
  leaver(login: string): string | null {
    return this.byLogin.get(login.trim().toLowerCase()) ?? null;
  }

  list(): Leaver[] {
    return [...this.byName.values()];
  }

  private index(list: readonly Leaver[]): void {
    this.byName = new Map(list.map((l) => [l.name.toLowerCase(), l]));
    this.byLogin = new Map();
    for (const l of list) {
      this.byLogin.set(l.name.toLowerCase(), l.name);
      for (const a of l.addresses) this.byLogin.set(a.toLowerCase(), l.name);
    }
  }
}
