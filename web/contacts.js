import { announce, api, h, requireSession } from "./app.js";

async function load() {
  const { data } = await api("GET", "/api/contacts");
  document
    .querySelector("#contacts tbody")
    .replaceChildren(
      ...data.map((c) =>
        h(
          "tr",
          {},
          h("td", { "data-label": "Name" }, c.name, c.public ? h("span", { class: "sub" }, " (shared)") : null),
          h("td", { "data-label": "Fax number" }, c.faxNumber ?? ""),
          h("td", { "data-label": "E-mail" }, c.email ?? ""),
          h("td", {}, c.faxNumber ? h("a", { href: `/send.html?to=${encodeURIComponent(c.name)}` }, "Send a fax") : ""),
        ),
      ),
    );
}

document.getElementById("add").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target);
  try {
    await api("POST", "/api/contacts", Object.fromEntries(f));
    ev.target.reset();
    await load();
    announce("Contact added.");
  } catch (err) {
    announce(err.status === 403 ? "Your key may not change contacts; ask the administrator." : err.message, true);
  }
});

await requireSession();
await load().catch((err) => announce(`Contacts cannot be shown now: ${err.message}`, true));
