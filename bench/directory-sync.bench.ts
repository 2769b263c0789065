// What a directory sync costs (issue 50): 5,000 people and 500 groups (each person in one to
// three groups, some groups mapped to a role or an inbox) in a private slapd, read by the LDAP
// source with paged searches, applied by the sync (stored in SQLite) and merged into the live
// list. Reports the median time of a full sync and the heap and RSS it adds.
// `npm run bench -- directory-sync`, or alone: node --import tsx bench/directory-sync.bench.ts
// A short trial: FAXGATE_BENCH_PEOPLE=200 FAXGATE_BENCH_GROUPS=20 FAXGATE_BENCH_ROUNDS=2
import { systemClock } from "../src/clock.js";
import { DirectorySync } from "../src/directory/directory-sync.js";
import { LdapSource } from "../src/directory/ldap-source.js";
import { mergePeople } from "../src/directory/merge.js";
import { silentLogger } from "../src/log/logger.js";
import { testLedger } from "../test/helpers/ledger.js";
import { ldapConfig, seedDirectory, slapdMissing, startSlapd } from "../test/helpers/slapd.js";
import { tempStore } from "../test/helpers/store.js";
import type { BenchResult } from "./types.js";
import { fileURLToPath } from "node:url";

const PEOPLE = Number(process.env.FAXGATE_BENCH_PEOPLE) || 5000;
const GROUPS = Number(process.env.FAXGATE_BENCH_GROUPS) || 500;
const ROUNDS = Number(process.env.FAXGATE_BENCH_ROUNDS) || 5;

export default async function bench(): Promise<BenchResult[]> {
  const missing = slapdMissing();
  if (missing) {
    process.stderr.write(`directory-sync: skipped (${missing})\n`);
    return [];
  }

  const slapd = await startSlapd();
  const temp = tempStore();
  try {
    const t0 = performance.now();
    const people = Array.from({ length: PEOPLE }, (_, i) => ({
      uid: `p${i}`,
      mail: `p${i}@example.com`,
      proxyAddresses: [`SMTP:p${i}@example.com`, `smtp:person.${i}@example.org`],
    }));
    const groups = Array.from({ length: GROUPS }, (_, g) => {
      const members: string[] = [];
      for (let i = g; i < PEOPLE; i += GROUPS) members.push(`p${i}`);
      for (let i = (g * 7) % PEOPLE; i < PEOPLE; i += GROUPS * 3) members.push(`p${i}`);
      return { cn: `g${g}`, members: [...new Set(members)] };
    });
    seedDirectory(slapd, people, groups);
    const seeded = performance.now() - t0;

    const roles: Record<string, "admin"> = {};
    const inbox: Record<string, string> = {};
    for (let g = 0; g < GROUPS; g += 10) roles[slapd.groupDn(`g${g}`)] = "admin";
    for (let g = 5; g < GROUPS; g += 10) inbox[slapd.groupDn(`g${g}`)] = `inbox${g}`;
    const ldap = ldapConfig(slapd, { groups: { base: slapd.groupsBase, roles, inbox } });

    const times: number[] = [];
    let heapAdded = 0;
    let rssAdded = 0;
    for (let r = 0; r < ROUNDS; r++) {
      global.gc?.();
      const heap0 = process.memoryUsage().heapUsed;
      const rss0 = process.memoryUsage().rss;
      const start = performance.now();
      // a fresh sync each round: the full read, the store write and the merge, as at a first start
      const sync = new DirectorySync({
        source: new LdapSource(ldap),
        store: temp.store,
        ledger: testLedger(temp.store),
        clock: systemClock,
        logger: silentLogger(),
        maxDrop: 1,
        door: "gateway",
      });
      const outcome = await sync.sync();
      const merged = mergePeople([], sync.people());
      times.push(performance.now() - start);
      if (!outcome.applied || merged.users.length !== PEOPLE)
        throw new Error(`sync ${r}: applied ${outcome.applied}, ${merged.users.length} of ${PEOPLE} people`);
      heapAdded = Math.max(heapAdded, process.memoryUsage().heapUsed - heap0);
      rssAdded = Math.max(rssAdded, process.memoryUsage().rss - rss0);
    }
    times.sort((a, b) => a - b);
    const mb = (b: number) => (b / 1_048_576).toFixed(1);
    const median = Math.round(times[Math.floor(times.length / 2)]!);
    return [
      {
        figure: `directory sync: ${PEOPLE} people, ${GROUPS} groups over LDAP (read, store, merge), median`,
        value: median,
        unit: `ms (max ${Math.round(times[times.length - 1]!)} ms, heap +${mb(heapAdded)} MB, RSS +${mb(rssAdded)} MB)`,
        note: `directory-sync: ${ROUNDS} full syncs from a private slapd (paged, ldaps), seeded in ${Math.round(seeded)} ms.`,
      },
    ];
  } finally {
    temp.cleanup();
    await slapd.dispose();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${JSON.stringify(await bench(), null, 2)}\n`);
}
