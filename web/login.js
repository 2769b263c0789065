import { announce, attempt, onThisSite } from "./app.js";

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
  if (data.secondFactor) return secondStep(data.secondFactor);
  done();
});

function done() {
  const next = new URLSearchParams(location.search).get("next");
  // only an address on this site, never another one
  location.replace(onThisSite(next));
}

async function post(url, body) {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
    credentials: "same-origin",
  });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error ?? `${r.status}`);
  return data;
}

const show = (id, on = true) => {
  document.getElementById(id).hidden = !on;
};

// the second step after the password (or the organisation's sign-in): a passkey or a code, or
// enrolling one when the account needs one and has none
function secondStep({ methods, enrol }) {
  show("login", false);
  show("sso", false);
  show("factor");
  announce("");
  if (enrol) {
    document.getElementById("factor-intro").textContent = "";
    show("factor-enrol");
    show("enrol-totp", methods.includes("totp"));
    show("enrol-passkey", methods.includes("passkey"));
    return;
  }
  document.getElementById("factor-intro").textContent = "Confirm it is you with your second factor.";
  show("factor-passkey", methods.includes("passkey"));
  show("factor-code", methods.includes("totp"));
}

document.getElementById("use-passkey").addEventListener(
  "click",
  attempt(async () => {
    const options = await post("/login/factor/passkey/options");
    const cred = await navigator.credentials.get({
      publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
    });
    await post("/login/factor/passkey", { response: cred.toJSON() });
    done();
  }),
);
document.getElementById("factor-code").addEventListener(
  "submit",
  attempt(async () => {
    await post("/login/factor/totp", { code: document.getElementById("code").value });
    done();
  }),
);
document.getElementById("enrol-passkey").addEventListener(
  "click",
  attempt(async () => {
    const options = await post("/login/factor/enrol/passkey/options");
    const cred = await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
    });
    await post("/login/factor/enrol/passkey", { response: cred.toJSON(), name: "Passkey" });
    done();
  }),
);
document.getElementById("enrol-totp").addEventListener(
  "click",
  attempt(async () => {
    const t = await post("/login/factor/enrol/totp");
    document.getElementById("totp-secret").textContent = t.secret;
    document.getElementById("totp-uri").href = t.uri;
    show("totp-setup");
  }),
);
document.getElementById("totp-confirm").addEventListener(
  "submit",
  attempt(async () => {
    await post("/login/factor/enrol/totp/confirm", { code: document.getElementById("enrol-code").value });
    done();
  }),
);

// back from the organisation's sign-in with a second step still to do
if (new URLSearchParams(location.search).get("factor")) {
  fetch("/login/factor", { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : null))
    .then((s) => {
      if (!s) return;
      const usable = s.enrolled.filter((k) => k !== "totp" || s.totp);
      secondStep(
        usable.length
          ? { methods: usable, enrol: false }
          : { methods: s.totp ? ["passkey", "totp"] : ["passkey"], enrol: true },
      );
    });
}
