// The sidecar ticket "<file>.json" written by the CUPS backend or by a program: it says where
// the file goes. It is read strictly (types, lengths), keys it does not know are ignored, and
// nothing in it is ever used as a path: the document is always the file next to it.
import { z } from "zod";

const text = (max: number) =>
  z
    .string()
    .max(max)
    .transform((s) => s.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").trim());

const onOff = z.union([
  z.boolean(),
  z.enum(["on", "off", "yes", "no", "true", "false"]).transform((v) => v === "on" || v === "yes" || v === "true"),
]);

export const ticketSchema = z.object({
  to: z
    .union([text(100), z.array(text(100)).max(50)])
    .optional()
    .transform((v) =>
      (v === undefined ? [] : Array.isArray(v) ? v : v.split(",")).map((s) => s.trim()).filter(Boolean),
    ),
  /** CUPS's `phone` job option as given (a dial string, read by dial-string.ts). */
  phone: text(300).optional(),
  /** CUPS's `faxPrefix` job option: the outside-line prefix of `phone`. */
  faxPrefix: text(20).optional(),
  recipientName: text(100).optional(),
  subject: text(200).optional(),
  notes: text(2000).optional(),
  cover: onOff.optional(),
  tags: z
    .array(z.string().regex(/^[A-Za-z0-9 _.:-]{1,40}$/, "tags are short words (letters, digits, space _ . : -)"))
    .max(10)
    .optional(),
  scheduledDate: z.iso.datetime({ offset: true }).optional(),
  copies: z.number().int().min(1).max(999).optional(),
});

export type Ticket = z.output<typeof ticketSchema>;

export type TicketResult = { ok: true; ticket: Ticket; ignoredKeys: string[] } | { ok: false; reason: string };

export const TICKET_MAX_BYTES = 64 * 1024;

export function parseTicket(raw: string): TicketResult {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (err) {
    return { ok: false, reason: `the ticket is not valid JSON (${(err as Error).message})` };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data))
    return { ok: false, reason: "the ticket is not a JSON object" };
  const parsed = ticketSchema.safeParse(data);
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    return { ok: false, reason: `the ticket's "${first.path.join(".") || "(root)"}" is invalid: ${first.message}` };
  }
  const known = new Set(Object.keys(ticketSchema.shape));
  const ignoredKeys = Object.keys(data).filter((k) => !known.has(k));
  return { ok: true, ticket: parsed.data, ignoredKeys };
}
