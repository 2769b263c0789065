// The one live source of the users and of the settings a SIGHUP reloads (users, destinations,
// inbound routes). Parts read it through getters; the few that must act when the users change
// (API clients, spool folders, console sessions, held keys) subscribe and are told, in the order
// they subscribed.
import type { Config, UserConfig } from "../config/index.js";
import { type DirectoryPerson, mergePeople, withDirectoryInboxes } from "../directory/index.js";
import { effectiveUsers } from "../keys/index.js";
import type { Logger } from "../log/index.js";

export type UsersListener = (users: readonly UserConfig[]) => void | Promise<void>;

export class LiveSettings {
  private current: Config;
  /** current, with the directory's inbox members added to inbound.groups */
  private merged: Config;
  private effective: UserConfig[];
  /** the people of the directory's sources (directory/), after the config's users */
  private directory: readonly DirectoryPerson[] = [];
  /** set once the directory's list was applied: before that a key without its person is no leaver */
  private directoryApplied = false;
  /** fills minted keys in (keys/key-minter.ts), when keys follow people */
  private keyFiller: ((users: UserConfig[], complete: boolean) => Promise<UserConfig[]>) | null = null;
  private readonly listeners: UsersListener[] = [];
  /** who has left the directory (directory/leavers.ts), for the doors' "has left" */
  private leftOf: (login: string) => string | null = () => null;
  private leftNames: () => string[] = () => [];

  constructor(
    config: Config,
    private readonly log: Logger,
  ) {
    this.current = config;
    this.merged = config;
    this.effective = effectiveUsers(config.users, config.data);
  }

  /** The config as it is now: as started, with the reloadable keys of the last reload. */
  config(): Config {
    return this.merged;
  }

  /** The users as they are now: the config's and the directory's, with keys rotated since (keys/key-overrides.ts). */
  users(): UserConfig[] {
    return this.effective;
  }

  /** The person a name or address belonged to who has left the directory, else null. */
  leaver(login: string): string | null {
    return this.leftOf(login);
  }

  /** The names of who has left, for the print folders that still refuse their files. */
  leavers(): string[] {
    return this.leftNames();
  }

  leaversFrom(leftOf: (login: string) => string | null, names: () => string[] = () => []): void {
    this.leftOf = leftOf;
    this.leftNames = names;
  }

  onUsersChanged(listener: UsersListener): void {
    this.listeners.push(listener);
  }

  /** Keys follow people: `fill` mints and fills the keys of people without one, at every refresh. */
  fillKeysWith(fill: (users: UserConfig[], complete: boolean) => Promise<UserConfig[]>): void {
    this.keyFiller = fill;
  }

  /** SIGHUP: new users, destination rules and inbound routes; everything else stays as started. */
  reload(next: Config): Promise<void> {
    const { users, destinations, inbound } = next;
    this.current = { ...this.current, users, destinations, inbound };
    return this.refreshUsers("SIGHUP");
  }

  /** A directory sync or push: the directory's people now; every listener is told before this resolves. */
  setDirectoryPeople(people: readonly DirectoryPerson[], why: string): Promise<void> {
    this.directory = people;
    this.directoryApplied = true;
    return this.refreshUsers(why);
  }

  /** The users read again (a reload, a rotated key); every listener is told before this resolves. */
  async refreshUsers(why: string): Promise<void> {
    const { users, shadowed, taken } = mergePeople(this.current.users, this.directory);
    for (const s of shadowed)
      this.log.debug({ person: s.person.name, by: s.by, why: s.why }, "DIRECTORY person shadowed by users:");
    this.merged = taken.length
      ? { ...this.current, inbound: withDirectoryInboxes(this.current.inbound, taken) }
      : this.current;
    const keyed = this.keyFiller ? await this.keyFiller(users, this.directoryApplied) : users;
    this.effective = effectiveUsers(keyed, this.current.data);
    for (const listener of this.listeners) await listener(this.effective);
    this.log.info({ users: this.effective.length, why }, "RELOADED users");
  }
}
