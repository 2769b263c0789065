// Keys follow people (issue 50 point 2): a person of the directory (no key pasted in) with the
// fax service's user id (from the directory, or mapped once with `faxgate directory map`) gets an
// API key minted with the admin key, kept sealed in the store, filled into the live list so they
// can fax, rotated by the key watch before it expires; when they leave or are disabled (gone from
// the list) the key is deleted at the service and in the store. Ledger rows name the key's id,
// never its token.
import type { TotpSealer } from "../auth/index.js";
import type { Clock } from "../clock.js";
import type { UserConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import { type ApiKey, type FaxApi, isFaxApiError } from "../fax/index.js";
import type { Ledger } from "../ledger/index.js";
import type { Logger } from "../log/index.js";
import type { PersonKey, PersonKeys } from "../store/index.js";

export interface KeyMinterOptions {
  /** a client with api.adminKey: only an admin key may mint keys for others */
  admin: FaxApi;
  keys: PersonKeys;
  sealer: TotpSealer;
  ledger: Pick<Ledger, "record">;
  lifetimeMs: number;
  clock: Clock;
  logger: Logger;
}

/** The least a role needs: a user sends (print_driver); an admin also reads contacts and history (base). */
export const accessFor = (role: UserConfig["role"]): "base" | "print_driver" =>
  role === "admin" ? "base" : "print_driver";

export class KeyMinter {
  /** one fill at a time: two reloads must not mint two keys for one person */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: KeyMinterOptions) {}

  /**
   * The users with the minted keys filled in; keys minted for people who need one. With
   * `complete` (the directory's list is applied), a key whose person is gone is deleted.
   */
  fill(users: UserConfig[], complete: boolean): Promise<UserConfig[]> {
    const next = this.turn.then(() => this.fillNow(users, complete));
    this.turn = next.catch(() => undefined);
    return next;
  }

  /** The key watch rotated `user`'s key: true when it is one of ours (kept here, not in keys.json). */
  async rotated(user: string, key: ApiKey & { token: string }): Promise<boolean> {
    const row = (await this.opts.keys.all()).find((r) => r.user === user && r.keyId);
    if (!row) return false;
    await this.opts.keys.putKey(user, {
      keyId: key.uuid,
      serviceUserId: key.userId,
      sealedToken: this.opts.sealer.seal(key.token),
      access: key.access,
      expiresAt: key.expiresAt,
    });
    return true;
  }

  private async fillNow(users: UserConfig[], complete: boolean): Promise<UserConfig[]> {
    const rows = new Map((await this.opts.keys.all()).map((r) => [r.user, r]));
    const keyed = new Set<string>();
    const out: UserConfig[] = [];
    for (const u of users) {
      const row = rows.get(u.name);
      const serviceUserId = u.serviceUserId ?? row?.mappedUserId ?? undefined;
      if (u.apiKey !== "" || !serviceUserId) {
        out.push(u);
        continue;
      }
      keyed.add(u.name);
      const token = await this.keyOf(u, serviceUserId, row);
      out.push(token ? { ...u, serviceUserId, apiKey: token } : { ...u, serviceUserId });
    }
    if (complete)
      for (const row of rows.values()) if (row.keyId && !keyed.has(row.user)) await this.remove(row, "person gone");
    return out;
  }

  /** The person's key: the stored one, else a new one (null when minting failed: they cannot send yet). */
  private async keyOf(u: UserConfig, serviceUserId: string, row: PersonKey | undefined): Promise<string | null> {
    const access = accessFor(u.role);
    if (row?.keyId && row.sealedToken) {
      if (row.serviceUserId === serviceUserId && row.access === access) {
        try {
          return this.opts.sealer.open(row.sealedToken);
        } catch {
          this.opts.logger.error(
            { user: u.name },
            "KEY: the stored key cannot be opened (sealKey changed?); minting another",
          );
        }
      }
      // mapped to another service user, or the role changed: the old key goes first
      await this.remove(row, "replaced");
    }
    try {
      const now = this.opts.clock.now();
      const expiresAt = new Date(now + this.opts.lifetimeMs).toISOString();
      const key = await this.opts.admin.createApiKey({
        name: `faxgate ${u.name}`.slice(0, 128),
        userId: serviceUserId,
        access,
        expiresAt,
      });
      if (!key.token) throw new Error("the service created a key but did not return its token");
      await this.opts.keys.putKey(u.name, {
        keyId: key.uuid,
        serviceUserId,
        sealedToken: this.opts.sealer.seal(key.token),
        access,
        expiresAt: key.expiresAt ?? expiresAt,
      });
      await this.opts.ledger.record({
        action: "key-minted",
        actor: { kind: "gateway" },
        object: { kind: "person", id: u.name },
        door: "gateway",
        detail: { keyId: key.uuid, access, expiresAt: key.expiresAt ?? expiresAt },
      });
      this.opts.logger.info({ user: u.name, keyId: key.uuid, access }, "KEY minted");
      return key.token;
    } catch (err) {
      this.opts.logger.warn(
        { user: u.name, err: describeError(err) },
        "KEY could not be minted: the person cannot send until it is (the next reload or sync tries again)",
      );
      return null;
    }
  }

  private async remove(row: PersonKey, why: string): Promise<void> {
    try {
      await this.opts.admin.deleteApiKey(row.keyId!);
    } catch (err) {
      // already gone at the service is what we wanted; anything else is tried again next time
      if (!(isFaxApiError(err) && err.status === 404)) {
        this.opts.logger.warn({ user: row.user, err: describeError(err) }, "KEY could not be deleted at the service");
        return;
      }
    }
    await this.opts.keys.clearKey(row.user);
    await this.opts.ledger.record({
      action: "key-deleted",
      actor: { kind: "gateway" },
      object: { kind: "person", id: row.user },
      door: "gateway",
      detail: { keyId: row.keyId!, reason: why },
    });
    this.opts.logger.info({ user: row.user, keyId: row.keyId, why }, "KEY deleted");
  }
}
