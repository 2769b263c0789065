// A private OpenLDAP server for the directory's tests: its own slapd.conf, database and TLS
// certificate in a temp folder, ldap:// (StartTLS) and ldaps:// on free loopback ports, seeded
// with ldapadd. A small schema of its own gives entries Active Directory's proxyAddresses and
// userAccountControl and a faxServiceUserId, so the AD mapping is tried without an AD.
// Debian: apt-get install slapd ldap-utils.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { LdapConfig } from "../../src/config/index.js";
import { configSchema } from "../../src/config/schema.js";
import { removeFolder, tempFolder } from "../tmp-dir.js";
import { freePort } from "./net.js";
import { waitUntil } from "./wait.js";

const SLAPD = "/usr/sbin/slapd";
const LDAPADD = "/usr/bin/ldapadd";

export const SUFFIX = "dc=example,dc=com";
export const ROOT_DN = `cn=admin,${SUFFIX}`;
const ROOT_PW = "root-secret-for-tests";
/** the gateway's service account (read only) */
export const BIND_DN = `cn=faxgate,ou=services,${SUFFIX}`;
export const BIND_PW = "bind-secret-for-tests";

/** Why the LDAP tests skip here, or null when they can run. */
export function slapdMissing(): string | null {
  if (!existsSync(SLAPD)) return "slapd is not installed (Debian: apt-get install slapd ldap-utils)";
  if (!existsSync(LDAPADD)) return "ldapadd is not installed (Debian: apt-get install ldap-utils)";
  return null;
}

const SCHEMA = `
attributetype ( 1.3.6.1.4.1.55555.1.1 NAME 'proxyAddresses' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.55555.1.2 NAME 'faxServiceUserId' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.55555.1.3 NAME 'userAccountControl' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.55555.2.1 NAME 'faxgatePerson' SUP top AUXILIARY MAY ( proxyAddresses $ faxServiceUserId $ userAccountControl ) )
`;

export interface SlapdPerson {
  uid: string;
  mail: string | string[];
  cn?: string;
  proxyAddresses?: string[];
  serviceUserId?: string;
  disabled?: boolean;
}

export interface Slapd {
  /** ldaps://127.0.0.1:PORT */
  ldapsUrl: string;
  /** ldap://127.0.0.1:PORT (StartTLS) */
  ldapUrl: string;
  caFile: string;
  peopleBase: string;
  groupsBase: string;
  dnOf(uid: string): string;
  groupDn(cn: string): string;
  /** LDIF through ldapadd (as the root DN) */
  add(ldif: string): void;
  /** LDIF through ldapmodify (changetype records) */
  modify(ldif: string): void;
  stop(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

export function personLdif(base: string, p: SlapdPerson): string {
  const mails = typeof p.mail === "string" ? [p.mail] : p.mail;
  return [
    `dn: uid=${p.uid},${base}`,
    "objectClass: inetOrgPerson",
    "objectClass: faxgatePerson",
    `uid: ${p.uid}`,
    `cn: ${p.cn ?? p.uid}`,
    `sn: ${p.uid}`,
    `displayName: ${p.cn ?? p.uid}`,
    ...mails.map((m) => `mail: ${m}`),
    ...(p.proxyAddresses ?? []).map((a) => `proxyAddresses: ${a}`),
    ...(p.serviceUserId ? [`faxServiceUserId: ${p.serviceUserId}`] : []),
    ...(p.disabled !== undefined ? [`userAccountControl: ${p.disabled ? 514 : 512}`] : []),
    "",
    "",
  ].join("\n");
}

export function groupLdif(base: string, cn: string, memberDns: string[]): string {
  return [
    `dn: cn=${cn},${base}`,
    "objectClass: groupOfNames",
    `cn: ${cn}`,
    ...memberDns.map((m) => `member: ${m}`),
    "",
    "",
  ].join("\n");
}

/** A group of the directory, its members by uid. */
export interface SlapdGroup {
  cn: string;
  members: string[];
}

/** Seeds the directory: `people` under the people base, then `groups` (members by uid), in one ldapadd. */
export function seedDirectory(s: Slapd, people: SlapdPerson[], groups: SlapdGroup[] = []): void {
  s.add(
    people.map((p) => personLdif(s.peopleBase, p)).join("") +
      groups
        .map((g) =>
          groupLdif(
            s.groupsBase,
            g.cn,
            g.members.map((uid) => s.dnOf(uid)),
          ),
        )
        .join(""),
  );
}

/** Deletes a person's entry, as an admin removing a leaver's account. */
export function removePerson(s: Slapd, uid: string): void {
  s.modify(`dn: ${s.dnOf(uid)}\nchangetype: delete\n\n`);
}

/**
 * The gateway's `directory.ldap` section (raw, as a config file holds it) for this server: ldaps,
 * the read-only service account, every person under the people base; `over` adds or replaces keys
 * (groups, attributes, pageSize).
 */
export function ldapSection(s: Slapd, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: s.ldapsUrl,
    caFile: s.caFile,
    bindDn: BIND_DN,
    bindPassword: BIND_PW,
    base: s.peopleBase,
    filter: "(objectClass=inetOrgPerson)",
    ...over,
  };
}

/** `ldapSection` validated, as the LDAP source takes it (for suites and benches that build the source alone). */
export function ldapConfig(s: Slapd, over: Record<string, unknown> = {}): LdapConfig {
  const parsed = configSchema.parse({
    api: { baseUrl: "https://fax.example.test" },
    directory: { ldap: ldapSection(s, over) },
  });
  return parsed.directory!.ldap!;
}

export async function startSlapd(): Promise<Slapd> {
  const dir = tempFolder("slapd");
  mkdirSync(path.join(dir, "db"));
  const certFile = path.join(dir, "cert.pem");
  const keyFile = path.join(dir, "key.pem");
  const made = spawnSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`openssl could not make the test certificate: ${made.stderr}`);
  writeFileSync(path.join(dir, "faxgate.schema"), SCHEMA);
  writeFileSync(
    path.join(dir, "slapd.conf"),
    `include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include ${dir}/faxgate.schema
pidfile ${dir}/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
TLSCertificateFile ${certFile}
TLSCertificateKeyFile ${keyFile}
sizelimit unlimited
database mdb
maxsize 1073741824
suffix "${SUFFIX}"
rootdn "${ROOT_DN}"
rootpw ${ROOT_PW}
directory ${dir}/db
index objectClass eq
index uid eq
index member eq
access to attrs=userPassword by anonymous auth by * none
access to * by dn.exact="${BIND_DN}" read by * none
`,
  );
  const ldapPort = await freePort();
  const ldapsPort = await freePort();
  const ldapUrl = `ldap://127.0.0.1:${ldapPort}`;
  let child: ChildProcess | null = null;
  let log = "";

  const run = (tool: string, ldif: string, extra: string[] = []) => {
    const r = spawnSync(tool, ["-x", "-H", ldapUrl, "-D", ROOT_DN, "-w", ROOT_PW, ...extra], {
      input: ldif,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`${path.basename(tool)} failed (${r.status}): ${r.stderr}`);
  };

  const start = async () => {
    log = "";
    child = spawn(
      SLAPD,
      ["-f", path.join(dir, "slapd.conf"), "-h", `${ldapUrl}/ ldaps://127.0.0.1:${ldapsPort}/`, "-d", "0"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout?.on("data", (b: Buffer) => (log += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (log += b.toString()));
    const exited = new Promise<never>((_, reject) =>
      child!.once("exit", (code) => reject(new Error(`slapd exited (${code}): ${log.slice(-2000)}`))),
    );
    exited.catch(() => undefined);
    await Promise.race([
      exited,
      waitUntil(
        () =>
          spawnSync("/usr/bin/ldapsearch", ["-x", "-H", ldapUrl, "-b", "", "-s", "base", "namingContexts"], {
            encoding: "utf8",
          }).status === 0,
        "slapd answering",
        15_000,
        100,
      ),
    ]);
  };

  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGTERM");
    await gone;
  };

  await start();
  const peopleBase = `ou=people,${SUFFIX}`;
  const groupsBase = `ou=groups,${SUFFIX}`;
  run(
    "/usr/bin/ldapadd",
    `dn: ${SUFFIX}
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: ou=people,${SUFFIX}
objectClass: organizationalUnit
ou: people

dn: ou=groups,${SUFFIX}
objectClass: organizationalUnit
ou: groups

dn: ou=services,${SUFFIX}
objectClass: organizationalUnit
ou: services

dn: ${BIND_DN}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: faxgate
userPassword: ${BIND_PW}

`,
  );
  return {
    ldapsUrl: `ldaps://127.0.0.1:${ldapsPort}`,
    ldapUrl,
    caFile: certFile,
    peopleBase,
    groupsBase,
    dnOf: (uid) => `uid=${uid},${peopleBase}`,
    groupDn: (cn) => `cn=${cn},${groupsBase}`,
    add: (ldif) => run("/usr/bin/ldapadd", ldif),
    modify: (ldif) => run("/usr/bin/ldapmodify", ldif),
    stop,
    start,
    dispose: async () => {
      await stop();
      removeFolder(dir);
    },
  };
}

/** The CA file's text (tests that write it into a config). */
export const caText = (s: Slapd): string => readFileSync(s.caFile, "utf8");
