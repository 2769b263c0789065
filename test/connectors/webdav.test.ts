// WebDAV delivery against webdav-server (npm) over HTTPS with Basic auth, files on disk: the PDF
// under the path pattern with its sidecar JSON, folders made by MKCOL, a name in use never
// overwritten (the next free name), a missing or ambiguous {matter} sent to the unsorted folder,
// a try after a crash finding its own file instead of writing a second, a wrong password named.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { v2 as webdav } from "webdav-server";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/net.js";
import { manualClock, type TempStore, tempStore, TEST_PDF } from "../helpers/store.js";
import { caFileIn, localCert } from "../helpers/tls-cert.js";
import { tempFolder, removeFolder } from "../tmp-dir.js";
import { deliveryQueue, keptFax, parseDelivery, queueFor, rowOf, secretsFile } from "./fixtures.js";

let root: string;
let url: string;
let server: webdav.WebDAVServer;
beforeAll(async () => {
  root = tempFolder("dav");
  const { key, cert } = await localCert();
  const users = new webdav.SimpleUserManager();
  const fax = users.addUser("fax", "dav-secret", false);
  const rights = new webdav.SimplePathPrivilegeManager();
  rights.setRights(fax, "/", ["all"]);
  const port = await freePort();
  server = new webdav.WebDAVServer({
    port,
    hostname: "127.0.0.1",
    https: { key, cert },
    httpAuthentication: new webdav.HTTPBasicAuthentication(users, "faxgate-test"),
    privilegeManager: rights,
    requireAuthentification: true,
  });
  await new Promise<void>((resolve, reject) =>
    server.setFileSystem("/", new webdav.PhysicalFileSystem(root), (ok) =>
      ok ? resolve() : reject(new Error("mount")),
    ),
  );
  await new Promise<void>((resolve) => server.start(() => resolve()));
  url = `https://127.0.0.1:${port}/`;
}, 60_000);
afterAll(async () => {
  await new Promise<void>((resolve) => server.stop(() => resolve()));
  removeFolder(root);
});

let t: TempStore | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

async function setup(over: Record<string, unknown> = {}, password = "dav-secret") {
  const clock = manualClock(Date.parse("2026-03-02T10:00:00Z"));
  t = tempStore({ clock });
  const folder = `office-${Math.random().toString(36).slice(2, 8)}`;
  mkdirSync(path.join(root, folder));
  const delivery = parseDelivery({
    webdav: {
      url: `${url}${folder}`,
      username: "fax",
      passwordSecret: "DAV_PASSWORD",
      caFile: await caFileIn(t.dir),
      ...over,
    },
  });
  const queue = deliveryQueue(t.store, clock, secretsFile(t.dir, { DAV_PASSWORD: password }));
  return { store: t.store, delivery, queue, dir: path.join(root, folder) };
}

const list = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();

describe("WebDAV delivery", () => {
  it("writes the PDF under the pattern with its sidecar, making the folders, never over a file", async () => {
    const { store, delivery, queue, dir } = await setup({ path: "Faxes/{date}/{csid}_{time}.pdf" });
    mkdirSync(path.join(dir, "Faxes", "2026-03-02"), { recursive: true });
    // someone else's file already has the name the first fax would take
    writeFileSync(path.join(dir, "Faxes", "2026-03-02", "CLINIC_LAB_095800.pdf"), "not ours");
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
    expect(list(dir)).toEqual([
      "Faxes/2026-03-02/CLINIC_LAB_095800-2.json",
      "Faxes/2026-03-02/CLINIC_LAB_095800-2.pdf",
      "Faxes/2026-03-02/CLINIC_LAB_095800.pdf",
    ]);
    expect(readFileSync(path.join(dir, "Faxes/2026-03-02/CLINIC_LAB_095800.pdf"), "utf8")).toBe("not ours");
    expect(readFileSync(path.join(dir, "Faxes/2026-03-02/CLINIC_LAB_095800-2.pdf")).equals(TEST_PDF)).toBe(true);
    const side = JSON.parse(readFileSync(path.join(dir, "Faxes/2026-03-02/CLINIC_LAB_095800-2.json"), "utf8"));
    expect(side).toMatchObject({ id: faxId, csid: "CLINIC LAB", file: "CLINIC_LAB_095800-2.pdf", unsorted: null });
    expect((await rowOf(store, faxId)).result).toMatch(/CLINIC_LAB_095800-2\.pdf$/);
  });

  it("a try after a crash finds its own file and writes no second", async () => {
    const { store, delivery, queue, dir } = await setup();
    const faxId = await keptFax(store);
    const row = await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toMatchObject({ delivered: 1 });
    const files = list(dir);
    // the same row again, as if the gateway died after writing and before recording it
    await store.sql.run("UPDATE deliveries SET state = 'pending' WHERE id = ?", [row.id]);
    expect(await queue.runOnce()).toMatchObject({ delivered: 1 });
    expect(list(dir)).toEqual(files);
  });

  it("a missing or ambiguous {matter} goes to the unsorted folder instead of a guess", async () => {
    const { store, delivery, queue, dir } = await setup({
      path: "Matters/{matter}/{date}_{sender}.pdf",
      matter: { pattern: "Matter No\\.? ?(\\d{4}-\\d+)" },
    });
    // the text as the OCR duty keeps it (received_text), read by the queue as in production
    const none = await keptFax(store);
    const two = await keptFax(store, { text: "Matter No. 2024-17 and Matter No 2023-5" });
    const one = await keptFax(store, { text: "re Matter No. 2024-17" });
    for (const id of [none, two, one]) await queueFor(store, id, delivery);
    expect(await queue.runOnce()).toMatchObject({ delivered: 3 });
    const files = list(dir);
    expect(files.filter((f) => f.startsWith("Matters/2024-17/"))).toHaveLength(2);
    expect(files.filter((f) => f.startsWith("Unsorted/"))).toHaveLength(4);
    const sides = files.filter((f) => f.startsWith("Unsorted/") && f.endsWith(".json"));
    expect(sides.map((f) => JSON.parse(readFileSync(path.join(dir, f), "utf8")).unsorted).sort()).toEqual([
      "ambiguous",
      "missing",
    ]);
  });

  it("a wrong password fails for good with the server's status", async () => {
    const { store, delivery, queue, dir } = await setup({}, "wrong");
    const faxId = await keptFax(store);
    await queueFor(store, faxId, delivery);
    expect(await queue.runOnce()).toMatchObject({ failed: 1 });
    expect((await rowOf(store, faxId)).lastError).toBe("401 from the WebDAV server");
    expect(existsSync(dir) && list(dir)).toEqual([]);
  });
});
