// Legal holds (operators): the list (GET /api/admin/holds), a hold added (POST) and released
// with a reason (POST .../release), each through the retention module on the gateway, which
// records the ledger row. A held number comes back shortened, as the CLI prints it.
import { announce, api, attempt, h, requireSession, when } from "./app.js";

await requireSession();

function releaseForm(hold) {
  const input = h("input", {
    id: `why-${hold.id}`,
    name: "reason",
    required: true,
    size: 20,
    maxlength: 500,
    "aria-label": `Reason to release hold ${hold.id}`,
  });
  return h(
    "form",
    {
      class: "inline",
      onsubmit: attempt(async () => {
        await api("POST", `/api/admin/holds/${encodeURIComponent(hold.id)}/release`, { reason: input.value });
        announce(`Hold ${hold.id} released: what it held follows the retention rule again`);
        await list();
      }),
    },
    input,
    " ",
    h("button", { type: "submit" }, "Release"),
  );
}

async function list() {
  const all = document.getElementById("all").checked;
  const { data } = await api("GET", `/api/admin/holds${all ? "?all=1" : ""}`);
  document
    .querySelector("#holds tbody")
    .replaceChildren(
      ...data.holds.map((x) =>
        h(
          "tr",
          { "data-id": x.id },
          h("td", { "data-label": "Id" }, x.id),
          h("td", { "data-label": "On" }, `${x.kind} ${x.value}`),
          h("td", { "data-label": "Reason" }, x.reason),
          h("td", { "data-label": "Held" }, `${when(x.heldAt)} by ${x.heldBy}`),
          h("td", { "data-label": "Released" }, x.releasedAt ? `${when(x.releasedAt)} by ${x.releasedBy}` : ""),
          h("td", { "data-label": "Release" }, x.releasedAt ? "" : releaseForm(x)),
        ),
      ),
    );
  return data.holds.length;
}

document.getElementById("add").addEventListener(
  "submit",
  attempt(async () => {
    const body = {};
    for (const k of ["kind", "value", "reason"]) body[k] = document.getElementById(k).value;
    const { data } = await api("POST", "/api/admin/holds", body);
    announce(`Hold ${data.hold.id} added on ${data.hold.kind} ${data.hold.value}`);
    document.getElementById("value").value = "";
    document.getElementById("reason").value = "";
    await list();
  }),
);
document.getElementById("all").addEventListener("change", attempt(list));
await list().catch((err) => announce(err.message, true));
