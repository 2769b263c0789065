// How many bytes of printed files the spool holds in memory at once. Files are handled many at a
// time (a burst of small letters shares the store's disk flushes), but each is read whole: the
// budget, not the number of files, bounds what a burst of large scans can take.

export class ByteBudget {
  private held = 0;
  private readonly waiting: Array<{ bytes: number; go: () => void }> = [];

  constructor(readonly limit: number) {}

  /**
   * Waits until `bytes` fit (first come, first served), and returns the release. A file larger
   * than the whole budget goes alone, once nothing else is held.
   */
  async acquire(bytes: number): Promise<() => void> {
    if (this.waiting.length > 0 || !this.fits(bytes)) {
      await new Promise<void>((go) => this.waiting.push({ bytes, go }));
    } else this.held += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= bytes;
      this.wake();
    };
  }

  get heldBytes(): number {
    return this.held;
  }

  private fits(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.limit;
  }

  private wake(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) {
      const w = this.waiting.shift()!;
      this.held += w.bytes;
      w.go();
    }
  }
}
