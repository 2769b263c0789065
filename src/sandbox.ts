// Sandbox mode: `faxgate start` with no config runs everything on loopback against the embedded
// fax service emulator, so a new user sees a fax go through in a minute without an account.
// A config with `api.baseUrl: sandbox` gets the same embedded service, seeded with its own users.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { validateConfig, type Config } from "./config/index.js";
import type { RunningEmulator } from "./emulator/index.js";
import { writeFileAtomic } from "./fs/index.js";
import { childLog, type Logger } from "./log/index.js";
import type { ServiceEndpoint } from "./main.js";

export const SANDBOX_DEMO_KEY = "sandbox-demo-key";
export const SANDBOX_DOMAIN = "fax.localhost";
export const SANDBOX_USER_EMAIL = "demo@localhost";
/** The sandbox's web console sign-in (loopback only; printed in the banner). */
export const SANDBOX_WEB_USER = "demo";
export const SANDBOX_WEB_PASSWORD = "demo-fax";
// `faxgate passwd` of SANDBOX_WEB_PASSWORD, made once: the sandbox config is built without waiting on scrypt
const SANDBOX_WEB_PASSWORD_HASH =
  "scrypt$16384$8$1$MLLtdb8miW/5R+Dp6/rqwA==$PjJ1OZ6J6SumoCXqF9kXvt0NL5PohKNSL3/MtV8Zw8E=";

/** The built-in config of sandbox mode, rooted at `cwd` (contract §1: ./data, ./spool, :2525). */
export function sandboxConfig(cwd: string = process.cwd()): Config {
  const data = path.resolve(cwd, "data");
  return validateConfig(
    {
      api: { baseUrl: "sandbox" },
      data,
      smtp: {
        listen: ["127.0.0.1:2525"],
        domains: [SANDBOX_DOMAIN],
        auth: "optional",
        trustedNetworks: ["127.0.0.0/8", "::1/128"],
      },
      spool: { root: path.resolve(cwd, "spool"), stableFor: "1s" },
      notify: {
        from: "faxgate@localhost",
        transport: `outbox:${path.join(data, "outbox")}`,
        inbound: { enabled: true, interval: "15s", mailBacklog: false },
      },
      admin: { listen: "127.0.0.1:9464" },
      queue: { pollInterval: "2s" },
      web: { listen: "127.0.0.1:8025" },
      users: [
        {
          name: SANDBOX_WEB_USER,
          email: SANDBOX_USER_EMAIL,
          apiKey: SANDBOX_DEMO_KEY,
          password: SANDBOX_WEB_PASSWORD_HASH,
          role: "admin",
        },
      ],
    },
    "sandbox config",
  );
}

/** What CLI commands need to reach a sandbox service started by `faxgate start`. */
export interface SandboxFile {
  baseUrl: string;
  caFile: string;
  adminKey: string;
}

function sandboxFilePath(dataDir: string): string {
  return path.join(dataDir, "sandbox.json");
}

export function readSandboxFile(dataDir: string): SandboxFile | null {
  try {
    return JSON.parse(readFileSync(sandboxFilePath(dataDir), "utf8")) as SandboxFile;
  } catch {
    return null;
  }
}

/** Starts the embedded emulator seeded with the config's users (their keys become print_driver keys). */
export async function startEmbeddedService(
  config: Config,
  logger: Logger,
  delayMs = 2000,
): Promise<{ service: ServiceEndpoint; emulator: RunningEmulator }> {
  const previous = readSandboxFile(config.data);
  const adminKey = previous?.adminKey ?? `sandbox-admin-${randomBytes(12).toString("hex")}`;
  const timezone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const seed = {
    account: { accountName: "Sandbox", timezone },
    users: [
      {
        email: "admin@localhost",
        firstName: "Sandbox",
        lastName: "Admin",
        userRole: "admin",
        keys: [{ name: "sandbox admin", access: "admin" as const, token: adminKey }],
      },
      ...config.users.map((u) => ({
        email: u.email,
        firstName: u.name,
        userRole: "user",
        emailNotifySendOption: "All",
        emailNotifySendIncAttachment: true,
        emailNotifyReceiveOption: "All",
        emailNotifyReceiveIncAttachment: true,
        emailToFaxCoverPageOption: false,
        keys: [{ name: "faxgate", access: "print_driver" as const, token: u.apiKey }],
        contacts: [
          { name: "Acme Billing", faxNumber: "(555) 010-0100", email: "billing@acme.example" },
          { name: "Busy Line", faxNumber: "(555) 010-0000" },
        ],
      })),
    ],
  };
  // loaded here: the CLI reads the sandbox config for every command and must not pay for the emulator
  const { startEmulator } = await import("./emulator/index.js");
  const emulator = await startEmulator({
    dataDir: path.join(config.data, "emulator"),
    seed,
    variant: config.api.variant,
    delayMs,
    logger: childLog(logger, { component: "emulator" }),
  });
  const file: SandboxFile = { baseUrl: emulator.baseUrl, caFile: emulator.caFile, adminKey };
  await writeFileAtomic(sandboxFilePath(config.data), `${JSON.stringify(file, null, 2)}\n`, 0o600);
  return { service: { baseUrl: emulator.baseUrl, caFile: emulator.caFile, adminKey }, emulator };
}

/**
 * A one-page PDF in the data folder, so that the banner's lines work as pasted on a machine that
 * has no PDF at hand. Written once; an existing file (perhaps the user's own) is left alone.
 */
export async function writeSampleDocument(dataDir: string): Promise<string> {
  const file = path.join(dataDir, "sample.pdf");
  if (existsSync(file)) return file;
  const { PDFDocument, StandardFonts } = await import("@cantoo/pdf-lib");
  const doc = await PDFDocument.create();
  doc.setTitle("faxgate sample document");
  const page = doc.addPage([612, 792]);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  page.drawText("faxgate sample document", { x: 72, y: 700, size: 24, font: bold });
  const lines = [
    "This page was written by faxgate in sandbox mode, so that the lines of its start banner",
    "work as pasted. Mail it to <number>@fax.localhost, or copy it into the print folder named",
    "after a fax number, and follow it with `npx faxgate jobs`.",
    "",
    "Numbers ending in 0000 are busy, 0001 do not answer, 0002 reach a voice line,",
    "0003 succeed on the second attempt; all others are delivered.",
  ];
  for (const [i, l] of lines.entries()) page.drawText(l, { x: 72, y: 650 - i * 18, size: 11, font });
  await writeFileAtomic(file, await doc.save(), 0o644);
  return file;
}

/** Quotes a path for the banner's shell lines only when it needs quoting. */
function shellWord(p: string): string {
  return /^[A-Za-z0-9_./@:+-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`;
}

/**
 * The banner. Its indented command lines are run verbatim by test/daemon/banner.test.ts: each must
 * work as pasted with the tools Debian ships, and print no warning (swaks 20201014 reads
 * `--attach @FILE` as the file, named by its base name, and warns that a bare `--attach FILE` is
 * deprecated; curl -v is needed to show the reply with the job id).
 */
export function sandboxBanner(
  addr: {
    smtp: Array<{ host: string; port: number }>;
    spoolRoot: string | null;
    outbox: string | null;
    admin: { host: string; port: number } | null;
    web?: { host: string; port: number } | null;
  },
  serviceUrl: string,
  sample?: string,
): string {
  const smtp = addr.smtp[0];
  const port = smtp?.port ?? 2525;
  const host = smtp?.host ?? "127.0.0.1";
  const spool = addr.spoolRoot ? path.join(addr.spoolRoot, "demo") : "./spool/demo";
  const rel = (p: string) => path.relative(process.cwd(), p) || ".";
  const doc = sample ? shellWord(rel(sample)) : "some.pdf";
  return [
    "",
    "  faxgate is running in SANDBOX mode: an embedded fax service emulator stands in for the real one.",
    "",
    `  SMTP (mail to fax)   ${host}:${port}   send to <number>@${SANDBOX_DOMAIN} from ${SANDBOX_USER_EMAIL}`,
    `  Print/drop folder    ${rel(spool)}/`,
    `  Notifications (.eml) ${addr.outbox ? rel(addr.outbox) : "(none)"}/`,
    `  Fax service emulator ${serviceUrl}`,
    addr.admin ? `  Health and metrics   http://${addr.admin.host}:${addr.admin.port}/healthz  /metrics` : "",
    addr.web
      ? `  Web console          http://${addr.web.host}:${addr.web.port}/   sign in as ${SANDBOX_WEB_USER}, password ${SANDBOX_WEB_PASSWORD}`
      : "",
    "",
    `  Send a first fax by mail (${sample ? `${rel(sample)} is a sample page; any PDF will do` : "any PDF will do"}):`,
    `    swaks --server ${host}:${port} --from ${SANDBOX_USER_EMAIL} --to 15551234567@${SANDBOX_DOMAIN} --header "Subject: Hello fax" --attach-type application/pdf --attach @${doc}`,
    `    printf 'Subject: Hello fax\\r\\n\\r\\nThis text becomes the cover page.\\r\\n' | curl -sS -v smtp://${host}:${port} --mail-from ${SANDBOX_USER_EMAIL} --mail-rcpt 15551234567@${SANDBOX_DOMAIN} -T - 2>&1 | grep '^< 250 2.0.0'`,
    "",
    "  ...or by dropping a file named after the number:",
    `    cp ${doc} "${rel(spool)}/15551234567 - Hello.pdf"`,
    "",
    `  Then: npx faxgate jobs      and look in ${addr.outbox ? rel(addr.outbox) : "the outbox"}/ for the outcome mail.`,
    "  Numbers ending in 0000 are busy, 0001 do not answer, 0002 reach a voice line; others are delivered.",
    "",
  ]
    .filter((l, i, a) => !(l === "" && a[i - 1] === ""))
    .join("\n");
}
