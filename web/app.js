// Shared by every page of the console: the session, calls to the JSON API with the CSRF token,
// a small element builder (text is always set as text, never parsed as HTML), and the header.

/** Builds an element: h('a', { href: '/x' }, 'text', child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat())
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

let session = null;

/** The signed-in user ({user, admin, csrfToken}); sends the browser to sign-in when there is none. */
export async function requireSession() {
  const r = await fetch("/api/session", { credentials: "same-origin" });
  if (r.status === 401) {
    location.replace(`/login.html?next=${encodeURIComponent(location.pathname + location.search)}`);
    throw new Error("not signed in");
  }
  session = await r.json();
  renderHeader();
  return session;
}

/** A call to the API; throws an Error with the server's words when it answers with an error. */
export async function api(method, url, body) {
  const headers = {};
  if (method !== "GET") headers["x-csrf-token"] = session?.csrfToken ?? "";
  let payload;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const r = await fetch(url, { method, headers, body: payload, credentials: "same-origin" });
  if (r.status === 401) {
    location.replace("/login.html");
    throw new Error("signed out");
  }
  const data = r.headers.get("content-type")?.includes("json") ? await r.json() : null;
  if (!r.ok) throw Object.assign(new Error(data?.error ?? `${r.status} ${r.statusText}`), { status: r.status });
  return { data, headers: r.headers };
}

/**
 * Where `input` (a next= from the address bar) leads, as an absolute address on this console, or
 * `fallback`. Parsed the way the browser will follow it: "/\evil", a tab inside or "https:evil"
 * pass any test of the first characters and still mean another site.
 */
export function onThisSite(input, fallback = "/") {
  if (typeof input !== "string" || input === "") return fallback;
  try {
    const url = new URL(input, location.origin);
    // the whole address, not its path: a path of "//evil" would be read as another host again
    return url.origin === location.origin ? url.href : fallback;
  } catch {
    return fallback;
  }
}

/** An event handler running `fn`; what it throws is said in the status line. */
export const attempt = (fn) => async (ev) => {
  ev?.preventDefault?.();
  try {
    await fn();
  } catch (err) {
    announce(err.message, true);
  }
};

/** Says something to the user (and to screen readers) in the page's status line. */
export function announce(text, isError = false) {
  const el = document.getElementById("status");
  if (!el) return;
  el.textContent = text;
  el.classList.toggle("error", isError);
}

export const STATE_WORDS = {
  queued: "waiting to be sent",
  sending: "being sent",
  deferred: "will be tried again",
  processing: "with the fax service",
  delivered: "delivered",
  failed: "failed",
  cancelled: "cancelled",
  held: "on hold",
  unknown: "being checked",
  active: "in progress",
  partial: "partly delivered",
  corrupt: "could not be read",
};

export function stateBadge(state) {
  return h("span", { class: `badge s-${state}` }, STATE_WORDS[state] ?? state);
}

// One format for times and one for numbers on every page, in the browser's language and time zone.
const TIME = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const NUMBER = new Intl.NumberFormat(undefined);

/** A time from the API (ISO 8601, UTC) as the reader's local time. */
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : TIME.format(d);
}

/** ISO times inside a sentence from the server ("next try at 2026-…Z") in the same local format. */
export function localTimes(text) {
  return text
    ? String(text).replace(/\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)/g, (m) => when(m))
    : "";
}

/** A count, grouped as the reader's language groups digits. */
export function num(n) {
  return n === null || n === undefined ? "" : NUMBER.format(n);
}

/** A size in bytes, in KB or MB, with the same number format. */
export function size(bytes) {
  if (bytes >= 1024 * 1024) return `${NUMBER.format(Math.round((bytes / 1024 / 1024) * 10) / 10)} MB`;
  return `${NUMBER.format(Math.max(1, Math.round(bytes / 1024)))} KB`;
}

export function subjectOf(job) {
  return job.subject || job.cover?.subject || job.documents?.[0]?.name || "(no subject)";
}

function renderHeader() {
  const nav = document.getElementById("nav");
  if (!nav || !session) return;
  const link = (href, text) =>
    h("li", {}, h("a", { href, "aria-current": location.pathname === href ? "page" : null }, text));
  nav.replaceChildren(
    h(
      "ul",
      {},
      link("/", "My faxes"),
      link("/send.html", "Send a fax"),
      link("/contacts.html", "Contacts"),
      session.inbox?.length ? link("/inbox.html", "Shared inbox") : null,
      link("/search.html", "Search"),
      session.admin ? link("/admin.html", "Queue") : null,
      session.admin ? link("/ledger.html", "Ledger") : null,
      session.admin ? link("/holds.html", "Legal holds") : null,
      session.admin ? link("/directory.html", "Directory") : null,
      link("/factors.html", "Sign-in factors"),
      h(
        "li",
        { class: "who" },
        h("span", {}, session.user),
        " ",
        h("button", { type: "button", class: "link", onclick: signOut }, "Sign out"),
      ),
    ),
  );
}

async function signOut() {
  const r = await api("POST", "/logout").catch(() => null);
  // signed in at the organisation's provider: signed out there too where it offers that
  location.replace(r?.data?.signOutUrl ?? "/login.html");
}
