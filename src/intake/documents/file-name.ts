// A document's name as it may leave the gateway (to the fax service, into notifications): the
// last path segment only, no control characters, bounded. A sender's name is data, never a path.

export const MAX_FILE_NAME_CHARS = 120;

/** "../../etc/passwd\r\nX-Evil: 1" -> "passwd X-Evil: 1"; an empty result becomes `fallback`. */
export function safeFileName(name: string, fallback = "document"): string {
  let last = name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1);
  // bounded work whatever the sender wrote: the head and the tail (the extension) are what is kept
  if (last.length > MAX_FILE_NAME_CHARS * 4) last = `${last.slice(0, MAX_FILE_NAME_CHARS * 2)} ${last.slice(-20)}`;
  const clean = last
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^\.+/, "");
  if (clean === "") return fallback;
  const chars = Array.from(clean);
  if (chars.length <= MAX_FILE_NAME_CHARS) return clean;
  // keep the extension: it says the type to people reading the notification
  const dot = clean.lastIndexOf(".");
  const ext = dot > 0 && clean.length - dot <= 10 ? clean.slice(dot) : "";
  return `${chars
    .slice(0, MAX_FILE_NAME_CHARS - Array.from(ext).length - 1)
    .join("")
    .trimEnd()}…${ext}`;
}
