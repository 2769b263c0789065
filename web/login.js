import { announce, onThisSite } from "./app.js";

const form = document.getElementById("login");

// the organisation's sign-in (web.oidc), when the gateway has one; it returns to next= as well
fetch("/api/sign-in-options", { credentials: "same-origin" })
  .then((r) => (r.ok ? r.json() : {}))
  .then((options) => {
    if (!options.oidc) return;
    const next = new URLSearchParams(location.search).get("next");
    const target = new URL(onThisSite(next), location.origin);
    const link = document.getElementById("sso-link");
    link.href = `/oidc/start?next=${encodeURIComponent(target.pathname + target.search)}`;
    document.getElementById("sso").hidden = false;
  })
  .catch(() => {});
form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  announce("Signing in…");
  const r = await fetch("/login", {
    method: "POST",
    body: new URLSearchParams(new FormData(form)),
    credentials: "same-origin",
  });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    announce(data.error ?? `sign-in failed (${r.status})`, true);
    document.getElementById("password").select();
    return;
  }
  const next = new URLSearchParams(location.search).get("next");
  // only an address on this site, never another one
  location.replace(onThisSite(next));
});
