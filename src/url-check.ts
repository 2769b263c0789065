// URLs that come from outside (a header, a config value, a link built on the console's address)
// are parsed and compared as URLs, never judged by their first characters: "/\evil", "https:evil"
// or a tab inside all pass a prefix test and mean another site to a browser (WHATWG URL parsing,
// which node's URL follows too).

/** True when `value` parses as an absolute URL whose scheme is one of `schemes` ("https:", ...). */
export function isUrlWithScheme(value: string, schemes: readonly string[] = ["http:", "https:"]): boolean {
  const u = parse(value);
  return u !== null && schemes.includes(u.protocol) && u.host !== "";
}

/** True when the Origin header `origin` names the host the request was sent to (its Host header). */
export function originIsHost(origin: string, host: string | undefined): boolean {
  const u = parse(origin);
  return u !== null && host !== undefined && u.origin !== "null" && u.host === host.toLowerCase();
}

/**
 * A link to `page` (a file of the console, "fax.html") under `base` (the console's address as users
 * reach it), with `query` encoded as parameters; null when the result would leave `base`'s origin.
 */
export function linkUnder(base: string, page: string, query: Record<string, string> = {}): string | null {
  const root = parse(base);
  if (!root || (root.protocol !== "https:" && root.protocol !== "http:")) return null;
  // the base's own query and fragment are not part of where the console lives
  root.search = "";
  root.hash = "";
  if (!root.pathname.endsWith("/")) root.pathname += "/";
  const url = parse(page, root.href);
  if (!url || url.origin !== root.origin || !url.pathname.startsWith(root.pathname)) return null;
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return url.href;
}

function parse(value: string, base?: string): URL | null {
  try {
    return new URL(value, base);
  } catch {
    return null;
  }
}

/**
 * The query of a link faxgate mails (web/mailed-link.ts serves it at `m`): what it points at and
 * when it was mailed (seconds), so the link can stop working after retention.links.
 */
export function mailedLinkQuery(
  kind: "job" | "received" | "address" | "confirm",
  id: string,
  atMs: number,
): Record<string, string> {
  return { k: kind, id, t: String(Math.floor(atMs / 1000)) };
}
