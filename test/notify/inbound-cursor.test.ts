import { describe, expect, it } from "vitest";
import type { FaxRecord } from "../../src/fax/types.js";
import { advanceCursor, isBehind, isSeen, parseCursor, serializeCursor } from "../../src/inbound/poller-cursor.js";

const rec = (id: string, createdAt: string, status = "success"): FaxRecord => ({
  messageId: id,
  createdAt,
  status,
  direction: "inbound",
});
const T = (s: string) => Date.parse(s);

describe("inbound cursor", () => {
  it("moves to the newest final record and remembers the ids at that time", () => {
    const fresh = [
      rec("c", "2026-11-21T10:00:02.000Z"),
      rec("b", "2026-11-21T10:00:02.000Z"),
      rec("a", "2026-11-21T10:00:01.000Z"),
    ];
    const c = advanceCursor(null, fresh, T("2026-11-21T11:00:00Z"));
    expect(c).toEqual({ t: T("2026-11-21T10:00:02.000Z"), ids: ["c", "b"] });
    expect(isSeen(rec("b", "2026-11-21T10:00:02.000Z"), c)).toBe(true);
    expect(isSeen(rec("d", "2026-11-21T10:00:02.000Z"), c)).toBe(false);
    expect(isBehind(rec("a", "2026-11-21T10:00:01.000Z"), c)).toBe(true);
  });

  it("stays behind a fax still being received, then passes it once final", () => {
    const prev = { t: T("2026-11-21T09:00:00Z"), ids: ["old"] };
    const fresh = [
      rec("new", "2026-11-21T10:00:03.000Z"),
      rec("busy", "2026-11-21T10:00:02.000Z", "processing"),
      rec("done", "2026-11-21T10:00:01.000Z"),
    ];
    const c = advanceCursor(prev, fresh, T("2026-11-21T10:05:00Z"));
    expect(c.t).toBe(T("2026-11-21T10:00:02.000Z") - 1);
    expect(isBehind(fresh[1]!, c)).toBe(false);
    const later = advanceCursor(
      c,
      [rec("new", "2026-11-21T10:00:03.000Z"), rec("busy", "2026-11-21T10:00:02.000Z")],
      T("2026-11-21T10:06:00Z"),
    );
    expect(later).toEqual({ t: T("2026-11-21T10:00:03.000Z"), ids: ["new"] });
  });

  it("a reception stuck for a day no longer holds the cursor; nothing new keeps it", () => {
    const fresh = [rec("x", "2026-11-21T10:00:00.000Z", "processing")];
    expect(advanceCursor(null, fresh, T("2026-11-23T10:00:00Z")).t).toBe(T("2026-11-21T10:00:00.000Z"));
    const prev = { t: 5, ids: ["a"] };
    expect(advanceCursor(prev, [], 10)).toBe(prev);
    expect(advanceCursor(null, [], 10)).toEqual({ t: 0, ids: [] });
  });

  it("first start marks everything read as seen, in progress or not", () => {
    const c = advanceCursor(
      null,
      [rec("p", "2026-11-21T10:00:00.000Z", "processing")],
      T("2026-11-21T10:00:01Z"),
      true,
    );
    expect(c).toEqual({ t: T("2026-11-21T10:00:00.000Z"), ids: ["p"] });
  });

  it("round-trips and reads a damaged value as none", () => {
    const c = { t: 12, ids: ["a"] };
    expect(parseCursor(serializeCursor(c))).toEqual(c);
    expect(parseCursor("{oops")).toBeNull();
    expect(parseCursor(null)).toBeNull();
  });
});
