// The configured users by address and sign-in name: who a mail's sender is (SMTP, the mailbox
// intake) and whom an AUTH login names. Shared by the doors that take mail, as the other sign-in
// pieces of this folder are.
import type { UserConfig } from "../config/index.js";

/** Looks users up by any of their addresses, case-insensitively. Rebuilt on reload. */
export class UserIndex {
  private readonly byAddress = new Map<string, UserConfig>();
  private readonly byName = new Map<string, UserConfig>();

  constructor(
    users: readonly UserConfig[],
    /** the person a name or address belonged to who has left the directory, else null */
    private readonly left: (login: string) => string | null = () => null,
  ) {
    for (const u of users) {
      this.byName.set(u.name, u);
      for (const a of [u.email, ...(u.aliases ?? [])]) this.byAddress.set(a.toLowerCase(), u);
    }
  }

  byEmail(address: string): UserConfig | undefined {
    return this.byAddress.get(address.trim().toLowerCase());
  }

  /** AUTH names: the user's name or any of their addresses. */
  byLogin(login: string): UserConfig | undefined {
    return this.byName.get(login.trim()) ?? this.byEmail(login);
  }

  named(name: string): UserConfig | undefined {
    return this.byName.get(name);
  }

  /** Whether a name or address no user has now belonged to someone who left (the doors then say "has left"). */
  hasLeft(login: string): boolean {
    return this.byLogin(login) === undefined && this.left(login) !== null;
  }
}

/**
 * The index of a live list of users, built again only when the list is replaced (a reload hands
 * out a new array): every MAIL FROM and every mailbox message looks users up through it.
 */
export function liveUserIndex(
  users: () => readonly UserConfig[],
  left?: (login: string) => string | null,
): () => UserIndex {
  let built: { of: readonly UserConfig[]; index: UserIndex } | null = null;
  return () => {
    const now = users();
    if (built?.of !== now) built = { of: now, index: new UserIndex(now, left) };
    return built.index;
  };
}
