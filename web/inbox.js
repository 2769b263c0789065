// The shared inbox: the received faxes of the groups the user is in. Each opens the one
// received-fax page (inbound.html), where it is taken, done, noted and forwarded.
import { announce, api, h, num, requireSession, when } from "./app.js";

const STATE = { new: "not taken", taken: "taken", done: "done" };
await requireSession();

async function list() {
  const show = document.getElementById("show").value;
  const { data } = await api("GET", `/api/inbox${show ? `?state=${show}` : ""}`);
  document.getElementById("groups").textContent = data.groups.length
    ? `Groups: ${data.groups.join(", ")}`
    : "You are in no group with a shared inbox.";
  document
    .querySelector("#faxes tbody")
    .replaceChildren(
      ...data.faxes.map((f) =>
        h(
          "tr",
          { "data-id": f.id },
          h(
            "td",
            { "data-label": "From" },
            h("a", { href: `/inbound.html?id=${encodeURIComponent(f.id)}` }, f.from ?? f.csid ?? "unknown"),
            f.csid ? h("span", { class: "sub" }, ` ${f.csid}`) : null,
          ),
          h("td", { "data-label": "Number dialled" }, f.dialled ?? ""),
          h("td", { "data-label": "Pages" }, num(f.pages)),
          h("td", { "data-label": "Received" }, h("time", { datetime: f.receivedAt }, when(f.receivedAt))),
          h("td", { "data-label": "State" }, h("span", { class: `badge r-${f.state}` }, STATE[f.state] ?? f.state)),
          h("td", { "data-label": "Owner" }, f.owner ?? ""),
        ),
      ),
    );
}

document.getElementById("show").addEventListener("change", () => list().catch((e) => announce(e.message, true)));
await list().catch((e) => announce(e.message, true));
