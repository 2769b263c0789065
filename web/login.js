import { announce, onThisSite } from "./app.js";

const form = document.getElementById("login");
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
