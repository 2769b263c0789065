// The daemon's eye on key expiry (needs api.adminKey: only an admin key may read key records).
// Warns ahead of a key's expiresAt (log + a key-expiry notification to the user), and close to
// expiry rotates the key itself: new key proven, kept in <data>/keys.json, old key deleted.
import type { Dispatcher as HttpDispatcher } from "undici";
import type { Clock } from "../clock.js";
import type { UserConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import { type ApiGate, type ApiKey, FaxClient, type FaxApi } from "../fax/index.js";
import type { Logger } from "../log/index.js";
import { Periodic } from "../periodic.js";
import type { QueueStore } from "../store/index.js";
import { saveOverride } from "./key-overrides.js";
import { createReplacementKey, findKey } from "./rotate.js";

const DAY = 86_400_000;

export interface KeyWatchOptions {
  baseUrl: string;
  adminKey: string;
  agent: HttpDispatcher;
  /** The process's API gate, so key checks count against the same rate as every other call. */
  gate?: ApiGate;
  dataDir: string;
  /** the users as running (rotated keys applied) */
  users: () => UserConfig[];
  /** the key a user has in the config file (what a rotation replaces) */
  configKeyOf: (user: string) => string;
  store: QueueStore;
  onRotated: (user: string) => Promise<void> | void;
  /** keeps a rotated key the gateway minted (keys follow people): true when it did, else keys.json */
  keepMinted?: (user: string, key: ApiKey & { token: string }) => Promise<boolean>;
  logger: Logger;
  clock: Clock;
  warnDays?: number;
  rotateDays?: number;
  intervalMs?: number;
}

export class KeyWatch {
  private readonly loop: Periodic<void>;
  /** Each user's key expiry as of the last check (null: the key does not expire), for the console. */
  private readonly expiry = new Map<string, { expiresAt: string | null; checkedAt: string }>();

  constructor(private readonly opts: KeyWatchOptions) {
    // one gateway at a time (a duty, checked each period: see InboundPoller)
    this.loop = new Periodic(
      async () => {
        if (await this.opts.store.holdsDuty("keys")) await this.checkAll();
      },
      {
        intervalMs: opts.intervalMs ?? 6 * 3_600_000,
        firstDelayMs: 10_000,
        unref: true,
        onError: (err) => opts.logger.warn({ err: describeError(err) }, "key expiry check failed"),
      },
    );
  }

  start(): void {
    this.loop.start();
  }

  /** The keys' expiry dates found by the last check, by user. */
  expiries(): Array<{ user: string; expiresAt: string | null; checkedAt: string }> {
    return [...this.expiry].map(([user, e]) => ({ user, ...e }));
  }

  /** Waits for a check (or rotation) in flight, so the store is not closed under it. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  private client(token: string): FaxApi {
    return new FaxClient({
      baseUrl: this.opts.baseUrl,
      apiKey: token,
      dispatcher: this.opts.agent,
      gate: this.opts.gate,
    });
  }

  runOnce(): Promise<void> {
    return this.loop.runOnce();
  }

  private async checkAll(): Promise<void> {
    const admin = this.client(this.opts.adminKey);
    const now = this.opts.clock.now();
    for (const user of this.opts.users()) {
      try {
        const current = this.client(user.apiKey);
        const me = await current.me();
        const key = await findKey(admin, me.userId, user.apiKey);
        this.expiry.set(user.name, { expiresAt: key?.expiresAt ?? null, checkedAt: new Date(now).toISOString() });
        if (!key?.expiresAt) continue;
        const left = Date.parse(key.expiresAt) - now;
        if (left > (this.opts.warnDays ?? 7) * DAY) continue;
        if (left <= (this.opts.rotateDays ?? 3) * DAY) {
          await this.rotate(user, admin, current, now);
          continue;
        }
        this.opts.logger.warn(
          { user: user.name, expiresAt: key.expiresAt },
          "KEY EXPIRES SOON: rotate it with `faxgate keys rotate`",
        );
        await this.opts.store.enqueueNotification({
          kind: "key-expiry",
          user: user.name,
          dedupeKey: `key-expiry:${key.uuid}`,
          payload: { keyName: key.name, expiresAt: key.expiresAt },
        });
      } catch (err) {
        this.opts.logger.warn({ user: user.name, err: describeError(err) }, "could not check key expiry");
      }
    }
  }

  private async rotate(user: UserConfig, admin: FaxApi, current: FaxApi, now: number): Promise<void> {
    const plan = await createReplacementKey({
      admin,
      current,
      currentToken: user.apiKey,
      clientWithKey: (t) => this.client(t),
      userName: user.name,
      now: new Date(now),
    });
    if (!(await this.opts.keepMinted?.(user.name, plan.newKey)))
      await saveOverride(
        this.opts.dataDir,
        user.name,
        this.opts.configKeyOf(user.name),
        plan.newKey.token,
        plan.newKey.uuid,
        new Date(now),
      );
    await this.opts.onRotated(user.name);
    if (plan.oldKey) await admin.deleteApiKey(plan.oldKey.uuid);
    this.opts.logger.warn(
      { user: user.name, newKeyId: plan.newKey.uuid },
      "KEY ROTATED: the new key is kept in keys.json in the data folder; put it into the config when convenient",
    );
  }
}
