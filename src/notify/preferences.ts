// The user's notification preferences as the service holds them (GET /v1/me, cached by the
// UserDirectory, so a change on the service shows within notify.preferenceRefresh). An
// unknown value counts as "All" (better one mail too many than a lost failure notice) and is
// logged once per user and value, not once per mail.
import { type User, notifyOption } from "../fax/index.js";
import type { Logger } from "../log/index.js";

export type PreferenceField = "emailNotifySendOption" | "emailNotifyReceiveOption";
export type Option = "All" | "Failure" | "None";

export class PreferenceReader {
  private readonly warned = new Set<string>();

  constructor(private readonly logger: Logger) {}

  option(userName: string, me: User, field: PreferenceField): Option {
    const raw = (me as unknown as Record<string, unknown>)[field];
    const value = typeof raw === "string" ? raw : raw == null ? "" : String(raw);
    const { option, known } = notifyOption(value);
    if (!known) {
      const key = `${userName}\u0000${field}\u0000${value}`;
      if (!this.warned.has(key)) {
        this.warned.add(key);
        this.logger.warn(
          { user: userName, field, value },
          `unknown notification preference "${value}": treated as All`,
        );
      }
    }
    return option;
  }
}

/** The service's booleans arrive as true/false or, in account records, as "true"/"false". */
export function flag(v: unknown): boolean {
  return v === true || (typeof v === "string" && v.trim().toLowerCase() === "true");
}

/** Whether a mail of this kind of news goes out under an option. */
export function wanted(option: Option, failure: boolean): boolean {
  return option === "All" || (option === "Failure" && failure);
}
