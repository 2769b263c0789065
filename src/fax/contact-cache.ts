// A user's contact lists, kept a short while (api.contactCache), so that repeated lookups
// (the console's contact list, a name in an address typed again and again over SMTP) do not each
// cost a call of the account's rate. Lookups that arrive while the same one is out share its
// answer. Any contact write through this gateway clears the user's lists at once; a write made
// elsewhere (the vendor's site, another gateway) shows when the entry expires.
import type { Contact, Page } from "./types.js";

/** Lists kept per user at most (each search is its own entry). */
const MAX_ENTRIES = 200;

export class ContactCache {
  private readonly entries = new Map<string, { at: number; value: Promise<Page<Contact>> }>();
  /** Counted for tests and docs/faults.md: lookups answered here, and those that went out. */
  hits = 0;
  misses = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The list for `key` (the query), from the cache when fresh, else from `load`. */
  get(key: string, load: () => Promise<Page<Contact>>): Promise<Page<Contact>> {
    if (this.ttlMs <= 0) return load();
    const e = this.entries.get(key);
    if (e && this.now() - e.at < this.ttlMs) {
      this.hits += 1;
      return e.value;
    }
    this.misses += 1;
    const value = load();
    this.entries.delete(key);
    this.entries.set(key, { at: this.now(), value });
    // a failure is not kept: the next lookup asks again
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }

  /** A contact was written: every list of the user may be stale. */
  invalidate(): void {
    this.entries.clear();
  }
}
