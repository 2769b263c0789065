// Cover page fields cut to the service's documented limits, with an ellipsis where cut.
import type { CoverSpec } from "../../store/index.js";

export const COVER_LIMITS = { subject: 55, notes: 4000, name: 40 } as const;

/** Cuts to `max` characters (code points, so emoji and accents are never split). */
export function cut(text: string | undefined, max: number): string | undefined {
  if (text === undefined) return undefined;
  // at most 2 UTF-16 units per character: past max * 2 (+ the ellipsis test) nothing is kept anyway
  const start = text.trimStart();
  const t = (start.length > max * 2 + 2 ? start.slice(0, max * 2 + 2) : start).trim();
  if (t === "") return undefined;
  // as many UTF-16 units as max or fewer is as many characters or fewer: no need to split it up
  if (t.length <= max) return t;
  const chars = Array.from(t);
  return chars.length <= max
    ? t
    : `${chars
        .slice(0, max - 1)
        .join("")
        .trimEnd()}…`;
}

export function coverSpec(input: {
  enabled: boolean;
  subject?: string;
  notes?: string;
  recipientName?: string;
  senderName?: string;
  replySheet?: boolean;
}): CoverSpec {
  const spec: CoverSpec = { enabled: input.enabled };
  if (input.replySheet) spec.replySheet = true;
  if (!input.enabled) return spec;
  const subject = cut(input.subject, COVER_LIMITS.subject);
  // bounded before it is reshaped: blank lines are squeezed, so 4x the limit is plenty
  const notes = cut(
    input.notes
      ?.slice(0, COVER_LIMITS.notes * 4)
      .replace(/\r\n/g, "\n")
      .replace(/\n{3,}/g, "\n\n"),
    COVER_LIMITS.notes,
  );
  const recipientName = cut(input.recipientName, COVER_LIMITS.name);
  const senderName = cut(input.senderName, COVER_LIMITS.name);
  if (subject) spec.subject = subject;
  if (notes) spec.notes = notes;
  if (recipientName) spec.recipientName = recipientName;
  if (senderName) spec.senderName = senderName;
  return spec;
}
