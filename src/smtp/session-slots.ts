// Who gets one of the SMTP server's session slots (issue 36 item 5). Strangers (clients outside
// trustedNetworks) share what the relays leave, less a reserve kept for the relays, and each of
// their addresses may hold only a few: idle sessions from a couple of addresses can no longer
// lock the office's own mail server out with 421.
export interface SlotLimits {
  max: number;
  /** slots only trusted clients may take */
  reservedTrusted: number;
  /** sessions at once from one address outside trustedNetworks */
  perClient: number;
}

export type Admission = { ok: true } | { ok: false; why: "full" | "strangers-full" | "per-client"; sessions: number };

export class SessionSlots {
  private total = 0;
  private strangers = 0;
  private readonly perClient = new Map<string, number>();

  constructor(private readonly limits: SlotLimits) {}

  /** The default reserve: a tenth of the slots, at most 10, and none when there is only one. */
  static defaultReserve(max: number): number {
    return Math.min(10, Math.floor(max / 10));
  }

  admit(client: string, trusted: boolean): Admission {
    if (this.total >= this.limits.max) return { ok: false, why: "full", sessions: this.total };
    if (!trusted) {
      if (this.strangers >= this.limits.max - this.limits.reservedTrusted)
        return { ok: false, why: "strangers-full", sessions: this.strangers };
      const mine = this.perClient.get(client) ?? 0;
      if (mine >= this.limits.perClient) return { ok: false, why: "per-client", sessions: mine };
      this.perClient.set(client, mine + 1);
      this.strangers += 1;
    }
    this.total += 1;
    return { ok: true };
  }

  release(client: string, trusted: boolean): void {
    this.total = Math.max(0, this.total - 1);
    if (trusted) return;
    this.strangers = Math.max(0, this.strangers - 1);
    const left = (this.perClient.get(client) ?? 1) - 1;
    if (left > 0) this.perClient.set(client, left);
    else this.perClient.delete(client);
  }
}
