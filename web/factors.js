import { announce, attempt, api, h, requireSession } from "./app.js";

const session = await requireSession();
const day = (iso) => (iso ? new Date(iso).toLocaleString() : "never");
const nameOf = (fallback) => document.getElementById("f-name").value.trim() || fallback;

async function refresh() {
  const { data } = await api("GET", "/api/factors");
  document
    .querySelector("#factors tbody")
    .replaceChildren(
      ...data.factors.map((f) =>
        h(
          "tr",
          {},
          h("td", {}, f.name),
          h("td", {}, f.kind === "totp" ? "authenticator app" : "passkey"),
          h("td", {}, day(f.createdAt)),
          h("td", {}, day(f.usedAt)),
        ),
      ),
    );
  document.getElementById("add-totp").hidden = !data.totp;
}

document.getElementById("add-passkey").addEventListener(
  "click",
  attempt(async () => {
    const { data: options } = await api("POST", "/api/factors/passkey/options", {});
    const cred = await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
    });
    await api("POST", "/api/factors/passkey", { response: cred.toJSON(), name: nameOf("Passkey") });
    announce("Passkey added.");
    await refresh();
  }),
);
document.getElementById("add-totp").addEventListener(
  "click",
  attempt(async () => {
    const { data } = await api("POST", "/api/factors/totp", {});
    document.getElementById("totp-secret").textContent = data.secret;
    document.getElementById("totp-uri").href = data.uri;
    document.getElementById("totp-setup").hidden = false;
  }),
);
document.getElementById("totp-confirm").addEventListener(
  "submit",
  attempt(async () => {
    await api("POST", "/api/factors/totp/confirm", {
      code: document.getElementById("t-code").value,
      name: nameOf("Authenticator app"),
    });
    document.getElementById("totp-setup").hidden = true;
    announce("Authenticator app added.");
    await refresh();
  }),
);
if (session.admin) {
  document.getElementById("reset-section").hidden = false;
  document.getElementById("reset").addEventListener(
    "submit",
    attempt(async () => {
      const user = document.getElementById("r-user").value.trim();
      const { data } = await api("POST", `/api/admin/factors/${encodeURIComponent(user)}/reset`, {});
      announce(`${data.removed} factor(s) of ${user} removed.`);
    }),
  );
}
await refresh().catch((err) => announce(err.message, true));
