// Exactly once across crashes and across gateways: a gateway SIGKILLed while its FHIR delivery is
// on the wire (the server has stored the document, the answer never came) leaves the row leased;
// after the lease runs out another pass delivers it, and the conditional create finds the
// document made before, so there is one. Two gateways on one PostgreSQL queue deliver each fax
// once between them.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { listDeliveries } from "../../src/store/sql/deliveries.js";
import { type FhirServer, startFhirServer } from "../helpers/fhir-server.js";
import { testLedger } from "../helpers/ledger.js";
import { openBackend, type BackendStore, usePgCluster } from "../helpers/store-backends.js";
import { steppedClock, type TempStore, tempStore } from "../helpers/store.js";
import { caFileIn } from "../helpers/tls-cert.js";
import { deliveryQueue, keptFax, parseDelivery, queueFor, rowOf, secretsFile } from "./fixtures.js";

const root = path.resolve(import.meta.dirname, "../..");
let fhir: FhirServer;
beforeAll(async () => {
  fhir = await startFhirServer();
  fhir.acceptToken("tok-exactly-once");
}, 120_000);
afterAll(() => fhir?.close());

const children: ChildProcess[] = [];
let t: TempStore | null = null;
afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  children.length = 0;
  t?.cleanup();
  t = null;
});

const docsOf = (messageId: string) =>
  fhir.documents.filter((d) => (d.identifier as Array<{ value: string }>).some((i) => i.value === messageId));

it("a gateway killed mid-delivery delivers once after restart", async () => {
  const clock = steppedClock();
  t = tempStore({ clock });
  const ca = await caFileIn(t.dir);
  const secrets = secretsFile(t.dir, { EHR_TOKEN: "tok-exactly-once" });
  const delivery = parseDelivery({
    fhir: { base: fhir.base, auth: { bearer: { tokenSecret: "EHR_TOKEN" } }, caFile: ca },
  });
  const faxId = await keptFax(t.store);
  const fax = (await t.store.getReceived(faxId))!;
  await queueFor(t.store, faxId, delivery);
  const stored = fhir.storeThenHang();
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(root, "test/helpers/delivery-child.ts"),
      JSON.stringify({ dataDir: path.join(t.dir, "data"), secretsFile: secrets }),
    ],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(child);
  await stored;
  const died = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await died;
  expect(await rowOf(t.store, faxId)).toMatchObject({ state: "delivering", attempts: 1 });
  expect(docsOf(fax.messageId)).toHaveLength(1);
  // the restarted gateway: nothing while the dead one's lease runs, then the delivery, once
  const queue = deliveryQueue(t.store, clock, secrets, "restarted-gateway");
  expect(await queue.runOnce()).toEqual({ delivered: 0, retried: 0, failed: 0 });
  clock.advance(301_000);
  expect(await queue.runOnce()).toEqual({ delivered: 1, retried: 0, failed: 0 });
  expect(await rowOf(t.store, faxId)).toMatchObject({ state: "delivered", attempts: 2 });
  expect(docsOf(fax.messageId)).toHaveLength(1);
  const ledger = await testLedger(t.store).rows({ object: { kind: "received", id: faxId } });
  expect(ledger.map((r) => r.action)).toEqual(["delivered"]);
}, 60_000);

const postgres = usePgCluster("connectors exactly once on PostgreSQL");
describe.skipIf(postgres.missing !== null)("on a PostgreSQL queue shared by two gateways", () => {
  let b: BackendStore | null = null;
  afterAll(async () => {
    await b?.cleanup();
  });

  it("each fax is delivered once between them", async () => {
    b = await openBackend("postgres", postgres.cluster, { clock: systemClock });
    const other = await b.reopen({ clock: systemClock });
    const ca = await caFileIn(b.dir);
    const secrets = secretsFile(b.dir, { EHR_TOKEN: "tok-exactly-once" });
    const delivery = parseDelivery({
      fhir: { base: fhir.base, auth: { bearer: { tokenSecret: "EHR_TOKEN" } }, caFile: ca },
    });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const id = await keptFax(b.store);
      await queueFor(b.store, id, delivery);
      ids.push(id);
    }
    const posts = () => fhir.log.filter((l) => l.method === "POST").length;
    const before = posts();
    const [one, two] = await Promise.all([
      deliveryQueue(b.store, systemClock, secrets, "gateway-a").runOnce(),
      deliveryQueue(other, systemClock, secrets, "gateway-b").runOnce(),
    ]);
    expect(one.delivered + two.delivered).toBe(12);
    expect(posts() - before).toBe(12);
    const rows = await listDeliveries(b.store.sql, {});
    expect(rows.every((r) => r.state === "delivered" && r.attempts === 1)).toBe(true);
    for (const id of ids) {
      const fax = (await b.store.getReceived(id))!;
      expect(docsOf(fax.messageId)).toHaveLength(1);
    }
    expect((await testLedger(b.store).rows({})).filter((r) => r.action === "delivered")).toHaveLength(12);
  }, 120_000);
});
