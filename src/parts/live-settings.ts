// The one live source of the users and of the settings a SIGHUP reloads (users, destinations,
// inbound routes). Parts read it through getters; the few that must act when the users change
// (API clients, spool folders, console sessions, held keys) subscribe and are told, in the order
// they subscribed.
import type { Config, UserConfig } from "../config/index.js";
import { effectiveUsers } from "../keys/index.js";
import type { Logger } from "../log/index.js";

export type UsersListener = (users: readonly UserConfig[]) => void | Promise<void>;

export class LiveSettings {
  private current: Config;
  private effective: UserConfig[];
  private readonly listeners: UsersListener[] = [];

  constructor(
    config: Config,
    private readonly log: Logger,
  ) {
    this.current = config;
    this.effective = effectiveUsers(config.users, config.data);
  }

  /** The config as it is now: as started, with the reloadable keys of the last reload. */
  config(): Config {
    return this.current;
  }

  /** The users as they are now: the config's, with keys rotated since (keys/key-overrides.ts). */
  users(): UserConfig[] {
    return this.effective;
  }

  onUsersChanged(listener: UsersListener): void {
    this.listeners.push(listener);
  }

  /** SIGHUP: new users, destination rules and inbound routes; everything else stays as started. */
  reload(next: Config): Promise<void> {
    const { users, destinations, inbound } = next;
    this.current = { ...this.current, users, destinations, inbound };
    return this.refreshUsers("SIGHUP");
  }

  /** The users read again (a reload, a rotated key); every listener is told before this resolves. */
  async refreshUsers(why: string): Promise<void> {
    this.effective = effectiveUsers(this.current.users, this.current.data);
    for (const listener of this.listeners) await listener(this.effective);
    this.log.info({ users: this.effective.length, why }, "RELOADED users");
  }
}
