// The one configuration object (contract §2), checked by zod at start. Every key has a
// default where a safe one exists, so a small config file stays small, and the default is
// written here only: code reads the parsed value, docs/ and config/faxgate.example.yaml show it.
// Durations are strings with their unit ("30s", "5m", "24h", "90d") read as milliseconds by
// duration(); only the keys INTERFACES.md names with a unit keep a number (api.timeoutMs,
// smtp.senderAuth.maxMessageAgeHours). Keys of older releases are renamed by old-keys.ts first.
import { z } from "zod";
import { DESTINATION_CATEGORIES } from "./destination-categories.js";
import { duration } from "./duration.js";
import { isHostPort } from "./host-port.js";
import { directorySchema } from "./directory.js";
import { retentionSchema } from "./retention.js";
import { fhirDelivery, graphDelivery, hl7Delivery, smbDelivery, webdavDelivery } from "./connectors.js";
import { isUrlWithScheme } from "../url-check.js";
import { databaseUrlProblem, urlWithPassword } from "./url-secrets.js";

const hostPort = z.string().refine(isHostPort, 'expected "host:port" with a port up to 65535, e.g. "127.0.0.1:2525"');

const cidr = z.string().regex(/^[0-9a-fA-F:.]+(\/\d{1,3})?$/, 'expected an address or network, e.g. "127.0.0.0/8"');

const secret = z.string().min(1, "must not be empty");

// Loose on purpose: internal domains (user@corp, faxgate@localhost) are normal in a server room.
const email = z.string().regex(/^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+$/, "expected an e-mail address");

export const AUTH_MODES = ["off", "optional", "required"] as const;

// Destination rules: plain digits (with # and a trailing *), never a regular expression, so a rule
// cannot make matching slow. Spaces, dashes, dots and brackets are ignored as in numbers.
const numberPrefix = z
  .string()
  .max(40)
  .regex(/^\+?[\d\s\-.()]*\d[\d\s\-.()]*$/, 'expected digits such as "+1900" (spaces - . ( ) are ignored)');
const numberPattern = z
  .string()
  .max(40)
  .regex(
    /^\+?[\d#\s\-.()]+\*?$/,
    'expected digits, # for any one digit and an optional * at the end, e.g. "+1 212 555 ####"',
  );

const destinationRule = z
  .object({
    action: z.enum(["allow", "deny"]),
    country: z
      .string()
      .regex(/^[A-Za-z]{2}$/, 'expected a two-letter country code such as "GB"')
      .transform((c) => c.toUpperCase())
      .optional(),
    prefix: numberPrefix.optional(),
    pattern: numberPattern.optional(),
    category: z.enum(DESTINATION_CATEGORIES).optional(),
  })
  .strict()
  .refine(
    (r) => r.country || r.prefix || r.pattern || r.category,
    "a rule needs at least one of country, prefix, pattern, category",
  );

const userDestinations = z.object({ rules: z.array(destinationRule).default([]) }).strict();

const userSchema = z
  .object({
    name: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/, "expected a short name of letters, digits, . _ -"),
    email: email,
    aliases: z.array(email).default([]),
    /** the fax service key; left out, the gateway mints one (directory.keys with api.adminKey and serviceUserId) */
    apiKey: secret.default(""),
    password: z
      .string()
      .regex(/^scrypt\$/, "expected a hash made by `faxgate passwd` (scrypt$...), never a plain password")
      .optional(),
    spool: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/, "expected a folder name without slashes")
      .optional(),
    /** local accounts (passwd names, NSS included) whose files in this user's spool folder are faxed; default: the account named as the folder */
    localAccounts: z
      .array(z.string().regex(/^[a-zA-Z0-9_][a-zA-Z0-9._@\\-]{0,63}[$]?$/, "expected a local account name"))
      .optional(),
    /** this user's destination rules, checked before the gateway's */
    destinations: userDestinations.optional(),
    /** where this user's mail text goes (overrides smtp.body) */
    mailBody: z.enum(["auto", "cover", "page", "ignore"]).optional(),
    /** admin: the web console also shows the operator's pages (the whole queue, refusals, keys) */
    role: z.enum(["user", "admin"]).optional(),
    /** this user's transmission report on outcome mail (overrides notify.report) */
    report: z.enum(["off", "always", "failed"]).optional(),
    /** this user confirms a first fax to a new number from mail no signature proved (overrides smtp.senderAuth's) */
    confirmNewDestinations: z.boolean().optional(),
    /** the fax service's user id of this person (directory people: from the directory or `faxgate directory map`) */
    serviceUserId: z.string().min(1).optional(),
  })
  .strict();

const resultRuleSchema = z
  .object({
    /** the service's resultCode or errorCode, e.g. "6100" */
    code: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    /** a phrase of resultInfo/errorInfo, matched literally and case-insensitively (not a regex) */
    text: z.string().min(1).max(200).optional(),
    action: z.enum(["retry", "fail"]),
    /** plain words for the notice; default: the service's own words */
    words: z.string().min(1).max(200).optional(),
  })
  .strict()
  .refine((r) => r.code !== undefined || r.text !== undefined, {
    message: "a result rule needs a code, a text, or both",
  });

const withoutDmarc = z.enum(["spf-and-dkim", "spf", "dkim"]);

const senderAuthSchema = z
  .object({
    /** off: mail only from trustedNetworks or after AUTH; verify: also from anywhere, when it proves its sender */
    mode: z.enum(["off", "verify"]).default("off"),
    /** DMARC identifier alignment: relaxed (same organisational domain) or strict (the very domain) */
    alignment: z.enum(["relaxed", "strict"]).default("relaxed"),
    /** for a domain without a DMARC record: what must pass (aligned with From:) */
    withoutDmarc: withoutDmarc.default("spf-and-dkim"),
    /** per sender domain: { "example.org": { withoutDmarc: spf, requireSignedRecipients: true, confirmNewDestinations: true } } */
    domains: z
      .record(
        z.string().min(1),
        z
          .object({
            withoutDmarc: withoutDmarc.optional(),
            /** refuse mail whose To/Cc its aligned DKIM signature does not cover (Google Workspace signs them) */
            requireSignedRecipients: z.boolean().optional(),
            /** this domain's users confirm a first fax to a new number (overrides the switch below) */
            confirmNewDestinations: z.boolean().optional(),
          })
          .strict(),
      )
      .default({}),
    /** signed mail whose signed Date: is older than this is refused (a copy of an old mail is not a new fax) */
    maxMessageAgeHours: z
      .number()
      .min(0.25)
      .max(24 * 7)
      .default(4),
    /** a fax whose numbers no signature proved, to a number its user never faxed, waits for the user's click in a mail (docs/mx.md) */
    confirmNewDestinations: z.boolean().default(false),
    /** how long such a fax waits for the click, then it is cancelled with a notice, never sent */
    confirmWait: duration({ min: "1m", max: "30d" }).prefault("24h"),
    /** ARC seals honoured only from these forwarders' domains (a mailing list, a ticket system) */
    arcForwarders: z.array(z.string().min(1)).default([]),
    /** the smallest DKIM key accepted, in bits */
    minKeyBits: z.number().int().min(512).default(1024),
    /** sessions at once from addresses that have not sent verified mail lately; more wait for their greeting */
    maxUnverifiedSessions: z.number().int().min(1).default(3),
    /** what a trusted relay's Authentication-Results decide */
    relays: z
      .object({
        /** failures (in every mode): refuse what the relay's topmost Authentication-Results record as dmarc=fail, or spf=fail without a DKIM pass; pass: also require a pass; off: do not look */
        check: z.enum(["off", "failures", "pass"]).default("failures"),
        /** the relays' authserv-ids: their topmost Authentication-Results must be one of these, and only then does a pass count */
        authservIds: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .refine((r) => r.check !== "pass" || r.authservIds.length > 0, {
        message: "check: pass needs the relays' authservIds (a pass is believed only from a named relay)",
        path: ["authservIds"],
      })
      .prefault({}),
  })
  .strict()
  .prefault({});

/** smtp.senderAuth as a config without it has it: for callers that build an SMTP config in code. */
export function senderAuthOff(): z.infer<typeof senderAuthSchema> {
  return senderAuthSchema.parse(undefined);
}

// One mailbox watched for faxes (docs/mailbox.md): the offices that cannot take mail on port 25.
const mailboxSchema = z
  .object({
    /** a short name for logs, metrics and the dedupe key (default: user@host) */
    name: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,127}$/, "expected a short name of letters, digits, . _ @ -")
      .optional(),
    host: z.string().min(1),
    port: z.number().int().min(1).max(65535).default(993),
    /** implicit TLS (993), STARTTLS required (143), or off (loopback test servers only) */
    tls: z.enum(["implicit", "starttls", "off"]).default("implicit"),
    /** an extra CA to trust for the server's certificate */
    caFile: z.string().optional(),
    user: z.string().min(1),
    password: secret.optional(),
    /** a command that prints an OAuth2 access token (Microsoft 365, Google Workspace); run before each connection */
    tokenCommand: z.string().min(1).optional(),
    /** the mailbox's own address: plus addresses (fax+15551234567@...) are read against it (default: user, when it is an address) */
    address: email.optional(),
    folder: z.string().min(1).default("INBOX"),
    /** where a message goes once its job is committed, and where a refused one goes */
    doneFolder: z.string().min(1).default("faxgate-done"),
    failedFolder: z.string().min(1).default("faxgate-failed"),
    /** the mailbox provider's Authentication-Results authserv-ids whose verdicts are believed (e.g. "mx.google.com") */
    trustedAuthservIds: z.array(z.string().min(1)).default([]),
    /** exchange-online: the topmost Authentication-Results with no authserv-id (Microsoft's shape) is the provider's */
    provider: z.enum(["other", "exchange-online"]).default("other"),
    /** a look at the folder this often besides IDLE (and instead of it where the server has none) */
    pollInterval: duration({ min: "5s", max: "1h" }).prefault("60s"),
    /** larger messages are refused without being downloaded (default: smtp.maxMessageBytes or 25 MB) */
    maxMessageBytes: z.number().int().min(1024).optional(),
  })
  .strict()
  .refine((m) => (m.password === undefined) !== (m.tokenCommand === undefined), "give either password or tokenCommand")
  .refine((m) => m.trustedAuthservIds.length > 0 || m.provider === "exchange-online", {
    message: "name the authserv-id of the provider's Authentication-Results, or set provider: exchange-online",
    path: ["trustedAuthservIds"],
  });

// Inbound routing (docs/inbound.md): rules kept as data, checked at start and on reload.
const inboundDelivery = z.union([
  /** the user the fax was received for (docs/inbound.md), by mail, as their service preference says */
  z.object({ receiver: z.literal(true) }).strict(),
  /** these configured users, by mail, each as their own preference says */
  z.object({ users: z.array(z.string().min(1)).min(1) }).strict(),
  /** one address (a shared mailbox), always, with the fax attached */
  z.object({ mail: email }).strict(),
  /** a folder the daemon writes the PDF into: atomic, named by the pattern, with this mode */
  z
    .object({
      folder: z.string().regex(/^\//, "expected an absolute folder path"),
      name: z.string().min(1).max(200).default("{date}_{time}_{sender}_{pages}p.pdf"),
      mode: z
        .string()
        .regex(/^0?[0-7]{3}$/, 'expected an octal mode such as "0640"')
        .default("0640"),
      /** the file's group (a name or number), e.g. the practice software's; the daemon's user must be in it, or be root */
      group: z
        .string()
        .regex(/^[a-z_][a-z0-9_.-]*\$?$|^\d+$/i, "expected a group name or number")
        .optional(),
      /** the file's owner (a name or number); only a daemon running as root can give a file away */
      owner: z
        .string()
        .regex(/^[a-z_][a-z0-9_.-]*\$?$|^\d+$/i, "expected a user name or number")
        .optional(),
    })
    .strict(),
  /** the console inbox of a group (inbound.groups), whose members are told by mail */
  z.object({ inbox: z.string().min(1) }).strict(),
  // connectors (issue 52, config/connectors.ts): queued deliveries to systems of record
  fhirDelivery,
  hl7Delivery,
  webdavDelivery,
  smbDelivery,
  graphDelivery,
]);

function isRegExp(p: string): boolean {
  try {
    new RegExp(p, "iu");
    return true;
  } catch {
    return false;
  }
}

const inboundRoute = z
  .object({
    /** named in errors and in each fax's timeline */
    name: z.string().min(1).max(80),
    match: z
      .object({
        /** the number the sender dialled (digits, # for one digit, a trailing *) */
        dialled: numberPattern.optional(),
        /** the sender's number, same form */
        sender: numberPattern.optional(),
        /** the sender's station id, compared without case; a trailing * matches any rest */
        csid: z.string().min(1).max(40).optional(),
        /** the configured user it was received for: the one the service's record names (docs/inbound.md) */
        user: z.string().min(1).optional(),
        /**
         * the fax's OCR text (ocr.enabled): a phrase, found without case and across line breaks, or
         * a regular expression given a time bound per fax (a pattern that backtracks is cut off,
         * and does not match). The fax waits in the default route's inbox until its text is known.
         */
        text: z
          .union([
            z.string().trim().min(2).max(200),
            z
              .object({
                pattern: z
                  .string()
                  .min(1)
                  .max(500)
                  .refine(isRegExp, "expected a regular expression (JavaScript syntax)"),
                within: duration({ min: "1ms", max: "1s" }).prefault("50ms"),
              })
              .strict(),
          ])
          .optional(),
      })
      .strict()
      .default({}),
    deliver: z.array(inboundDelivery).min(1),
    /** false (default): the first matching rule decides; true: the following rules are looked at too */
    continue: z.boolean().default(false),
  })
  .strict();

const inboundGroup = z
  .object({
    /** configured user names: they see the group's inbox in the console and are told of each fax */
    members: z.array(z.string().min(1)).min(1),
    /** a fax nobody has taken for this long is sent again (0: never) */
    escalateAfter: duration().prefault("0s"),
    /** who gets it again: the group (default), a configured user's name, or a mail address */
    escalateTo: z.string().min(1).optional(),
  })
  .strict();

const smtpSchema = z
  .object({
    listen: z.array(hostPort).min(1).default(["127.0.0.1:2525"]),
    domains: z.array(z.string().min(1)).min(1).default(["fax.localhost"]),
    defaultCountryCode: z
      .string()
      .regex(/^\d{1,3}$/, 'expected a country calling code such as "1"')
      .default("1"),
    maxMessageBytes: z.number().int().min(1024).default(26_214_400),
    maxRecipients: z.number().int().min(1).max(1000).default(50),
    auth: z.enum(AUTH_MODES).default("optional"),
    trustedNetworks: z.array(cidr).default(["127.0.0.0/8", "::1/128"]),
    tls: z.object({ cert: z.string(), key: z.string() }).strict().optional(),
    hostname: z.string().optional(),
    maxConnections: z.number().int().min(1).default(100),
    /** sessions at once from one address outside trustedNetworks (as Postfix's smtpd_client_connection_count_limit) */
    maxConnectionsPerClient: z.number().int().min(1).default(10),
    /** NOOP, RSET, VRFY and HELP in one session without a message accepted, before it is cut (Postfix's smtpd_junk_command_limit) */
    maxJunkCommands: z.number().int().min(1).default(100),
    /** messages per user per minute */
    maxMessagesPerMinute: z.number().int().min(1).default(60),
    /** messages per minute from one address outside trustedNetworks (the public MX mode) */
    maxMessagesPerMinutePerClient: z.number().int().min(1).default(30),
    socketTimeout: duration({ min: "1s" }).prefault("60s"),
    /** Pause before the 220 for clients outside trustedNetworks (at least smtp-server's own 100 ms, which every client waits); one that talks first is cut (421). */
    greetingDelay: duration({ max: "30s" }).prefault("100ms"),
    /** inline images smaller than this are taken for logos/signatures and left out */
    inlineImageMinBytes: z.number().int().min(0).default(20_480),
    /** where the text of a mail goes: auto (cover notes when there is a cover, else a first page), cover, page, ignore */
    body: z.enum(["auto", "cover", "page", "ignore"]).default("auto"),
    /** sessions at once kept for trustedNetworks: strangers get at most maxConnections minus these */
    reservedTrustedConnections: z.number().int().min(0).optional(),
    /** a session that has had no message accepted for this long is closed (421), NOOPs or not */
    idleSessionTimeout: duration({ min: "1s" }).prefault("2m"),
    /** the pause after a failed AUTH, times the session's failures (a guesser waits; a typo barely) */
    authFailureDelay: duration({ max: "10s" }).prefault("1s"),
    /** the public MX mode (docs/mx.md): mail from outside trustedNetworks without AUTH proves its sender */
    senderAuth: senderAuthSchema,
  })
  .strict();

const adminSchema = z
  .object({
    listen: hostPort,
    /** /healthz fails when the data disk has less free space than this (MB) */
    minFreeMb: z.number().min(0).default(100),
  })
  .strict();

// Console sign-in through an OpenID Connect provider (Entra ID, Google Workspace, Keycloak...):
// docs/sign-in.md names each field as the provider's registration page does.
const oidcSchema = z
  .object({
    /** the provider's issuer URL; its /.well-known/openid-configuration is read at start */
    issuer: z
      .string()
      .url()
      .refine((u) => isUrlWithScheme(u, ["https:"]), "expected an https: URL"),
    clientId: z.string().min(1),
    /** e.g. ${FAXGATE_OIDC_SECRET} from the secrets file; absent: a public client (PKCE only) */
    clientSecret: secret.optional(),
    /** the ID token claim naming the person: matched to users[].email, aliases or name */
    personClaim: z.string().min(1).default("email"),
    /** a sign-in is allowed only when the ID token's `groups` claim holds one of these (absent: any) */
    groups: z.array(z.string().min(1)).min(1).optional(),
    /** refuse an ID token whose `amr` names no second factor (and whose `acr` is not in mfaAcr) */
    requireMfa: z.boolean().default(false),
    /** `acr` values that count as multi-factor on their own (a provider that sends no `amr`) */
    mfaAcr: z.array(z.string().min(1)).default([]),
    /** an extra trusted CA (PEM file) for a provider with a private certificate */
    caFile: z.string().optional(),
  })
  .strict();

// A second factor after the password (or after a provider sign-in without one): a passkey, or a
// TOTP code as the fallback. Anyone may enrol; `require` makes it a condition for a role.
export const FACTOR_REQUIREMENTS = ["passkey", "totp", "passkey-or-totp"] as const;
const factorsSchema = z
  .object({
    /** role → the factor its people must sign in with, e.g. {admin: passkey-or-totp}; without one enrolled, the first sign-in enrols */
    require: z.partialRecord(z.enum(["user", "admin"]), z.enum(FACTOR_REQUIREMENTS)).default({}),
    /** the key TOTP secrets are sealed with at rest, e.g. ${FAXGATE_FACTOR_KEY} from the secrets file (no key: no TOTP) */
    totpKey: z.string().min(32, "use at least 32 characters (e.g. openssl rand -base64 32)").optional(),
  })
  .strict();

const webSchema = z
  .object({
    /** where the console listens, "host:port" (the sandbox: 127.0.0.1:8025) */
    listen: hostPort,
    /** serve https with this certificate and key, as smtp.tls (else plain http: loopback or behind a TLS proxy) */
    tls: z.object({ cert: z.string(), key: z.string() }).strict().optional(),
    /** a session ends this long after sign-in */
    sessionLifetime: duration({ min: "1m", max: "30d" }).prefault("12h"),
    /** a session also ends after this long without a request (unset: only sessionLifetime ends it) */
    idleTimeout: duration({ min: "1m", max: "30d" }).optional(),
    /** how often live updates look at the queue for changes (also changes made by other gateways) */
    livePoll: duration({ min: "100ms", max: "60s" }).prefault("1s"),
    /** the pause after a wrong password, times the failures so far (at most five times) */
    authFailureDelay: duration({ max: "10s" }).prefault("1s"),
    /** the console's address as users reach it, for links in mails (default: http(s)://listen) */
    publicUrl: z
      .string()
      .url()
      .refine((u) => isUrlWithScheme(u), "expected an http:// or https:// URL")
      .optional(),
    /** TLS proxies in front whose X-Forwarded-For names the client (sign-in lockout counts per client) */
    trustedProxies: z.array(cidr).optional(),
    /** each user's calls to the fax service from the console: per minute, and at once; past them 429 */
    apiCallsPerMinute: z.number().int().min(1).max(100_000).default(60),
    apiCallsAtOnce: z.number().int().min(1).max(64).default(2),
    /** single sign-on with an OpenID Connect provider (docs/sign-in.md) */
    oidc: oidcSchema.optional(),
    /** second factors for console sign-in: passkeys and TOTP (docs/sign-in.md) */
    factors: factorsSchema.prefault({}),
  })
  .strict();

const notifySchema = z
  .object({
    from: email,
    /** smtp://host:port, smtps://user:pass@host:port, or outbox:/path/to/folder */
    transport: z.string().regex(/^(smtps?:\/\/|outbox:)/, "expected smtp://, smtps:// or outbox:DIR"),
    adminCopy: email.optional(),
    preferenceRefresh: duration({ min: "1s" }).prefault("5m"),
    /** attach the transmission report (PDF) to outcome mail: never, always, or only when a recipient failed */
    report: z.enum(["off", "always", "failed"]).default("off"),
    /** what of a fax any mail may carry (the PDF, the report's first page, subject and file names): notify/what-leaves.ts */
    attachments: z.enum(["service", "never", "inbound-only"]).default("service"),
    inbound: z
      .object({
        enabled: z.boolean().default(true),
        interval: duration({ min: "1s" }).prefault("60s"),
        /** on the first start, mail inbound faxes already there (default: only new ones) */
        mailBacklog: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
  })
  .strict();

const spoolSchema = z
  .object({
    root: z.string().min(1),
    /** how long a file's size must stay unchanged before it is taken */
    stableFor: duration({ min: "50ms" }).prefault("2s"),
    /** a true repeat (same user, content, destinations, cover) within this window is faxed once; the repeat goes to failed/ with a reason */
    dedupeWindow: duration().prefault("60m"),
    maxFileBytes: z.number().int().min(1024).default(52_428_800),
    /** a file still changing after this long is refused (it would otherwise wait forever) */
    maxWriteTime: duration({ min: "1s" }).prefault("30m"),
    /** the outside-line prefix of a print job's `phone` option (CUPS faxPrefix): strip it (a cloud service dials out itself) or keep it in front of the number */
    faxPrefix: z.enum(["strip", "keep"]).default("strip"),
    /** a print job with no destination waits this long for its owner's number in the console, then ends with a notice */
    addressWait: duration({ min: "1m", max: "30d" }).prefault("24h"),
  })
  .strict();

const databaseUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'expected a PostgreSQL URL, e.g. "postgres://faxgate@db.example.com/faxgate"')
  .superRefine((url, ctx) => {
    const problem = databaseUrlProblem(url);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

export const configSchema = z
  .object({
    api: z
      .object({
        /** https URL of the fax service, or "sandbox" for the embedded emulator. */
        baseUrl: z
          .union([
            z.literal("sandbox"),
            z
              .string()
              .url()
              .refine((u) => isUrlWithScheme(u, ["https:"]), 'must be an https: URL or "sandbox"'),
          ])
          .default("sandbox"),
        caFile: z.string().optional(),
        adminKey: secret.optional(),
        timeoutMs: z.number().int().min(1000).max(600_000).default(30_000),
        concurrency: z.number().int().min(1).max(64).default(4),
        ratePerSecond: z.number().positive().max(1000).default(5),
        /** Which documented response shapes the service uses ('a' or 'b'); both are read either way. */
        variant: z.enum(["a", "b"]).default("a"),
        /** fax history calls per minute for the whole account (polling, reconciliation, inbound share it) */
        historyPerMinute: z.number().int().min(1).max(10_000).default(8),
        /** fraction of ratePerSecond and concurrency held for the dispatcher's sends and tracking */
        dispatchShare: z.number().min(0).max(0.9).default(0.5),
        /** how long a user's contact list is reused for lookups; 0: ask the service every time */
        contactCache: duration({ max: "1h" }).prefault("30s"),
      })
      .strict()
      .prefault({}),
    data: z.string().min(1).default("./data"),
    /**
     * The shared queue of several gateways: postgres://user[:password]@host[:port]/db (docs/ha.md),
     * or {url, password} with the password apart (any characters; e.g. ${VAR} from the secrets
     * file). Absent: the embedded SQLite queue in `data`. Resolved to one URL with the password
     * percent-encoded; it is masked wherever the config or an error is shown.
     */
    database: z
      .union([databaseUrl, z.object({ url: databaseUrl, password: z.string().min(1).optional() }).strict()])
      .transform((d) => (typeof d === "string" ? d : d.password ? urlWithPassword(d.url, d.password) : d.url))
      .optional(),
    smtp: smtpSchema.optional(),
    /** the DNS servers used for SPF, DKIM and DMARC (default: the system's) */
    dns: z
      .object({
        servers: z.array(hostPort).min(1).optional(),
        /** per try (two tries per server); a lookup that gets no answer makes the mail wait (451) */
        timeout: duration({ min: "100ms", max: "30s" }).prefault("2s"),
      })
      .strict()
      .prefault({}),
    intake: z
      .object({
        /** a file the sender attached that cannot be faxed: refuse the whole fax (default), or send the rest and say so first in the outcome */
        partial: z.enum(["refuse", "send"]).default("refuse"),
      })
      .strict()
      .prefault({}),
    spool: spoolSchema.optional(),
    queue: z
      .object({
        maxAge: duration({ min: "1m" }).prefault("48h"),
        /** backoff schedule for temporary failures; the last step repeats */
        retrySchedule: z
          .array(duration({ min: "1ms" }))
          .min(1)
          .prefault(["30s", "1m", "5m", "15m", "30m", "1h"]),
        /** tries for a busy / no-answer result before the recipient fails */
        maxFaxTries: z.number().int().min(1).default(3),
        pollInterval: duration({ min: "100ms" }).prefault("10s"),
        /** lease on a send in progress, renewed while it runs */
        lease: duration({ min: "500ms" }).prefault("60s"),
        /** wait this long after a send before reconciling its unknown outcome */
        reconcileGrace: duration().prefault("5s"),
        /**
         * faxes waiting to be sent (queued, deferred, being handed over) past which every door
         * answers "busy, try again later" (SMTP 451 4.3.2, console 503) instead of taking more; 0: no limit
         */
        maxWaiting: z.number().int().min(0).default(10_000),
        /** faxes in flight to one destination number at a time, across all jobs */
        perNumberConcurrency: z.number().int().min(1).max(64).default(1),
        /** hand scheduled jobs to the service this long before they are due (0: they wait in our queue, cancellable, until due) */
        scheduleAhead: duration().prefault("0s"),
        /** operator rules for fax results, checked before the built-in ones (docs/queue.md) */
        resultRules: z.array(resultRuleSchema).default([]),
        /** more tries for a failed result no rule knows */
        unknownResultTries: z.number().int().min(0).max(20).default(1),
        /** records per fax history call when following faxes (500 is the service's maximum) */
        historyPageSize: z.number().int().min(1).max(500).default(500),
        /** while a user's key is refused, how often it is tried again */
        keyRecheck: duration({ min: "100ms" }).prefault("5m"),
      })
      .strict()
      .prefault({}),
    notify: notifySchema.optional(),
    admin: adminSchema.optional(),
    log: z
      .object({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).default("info"),
        /** "json" for journald/log shippers, "pretty" for a terminal; default: pretty on a TTY */
        format: z.enum(["json", "pretty", "auto"]).default("auto"),
      })
      .strict()
      .prefault({}),
    users: z.array(userSchema).default([]),
    /** destination policy: rules (first match wins) and the built-in categories refused */
    destinations: z
      .object({
        refuse: z.array(z.enum(DESTINATION_CATEGORIES)).default([...DESTINATION_CATEGORIES]),
        rules: z.array(destinationRule).default([]),
      })
      .strict()
      .prefault({}),
    /** The receiver for the service's fax events (docs/webhooks.md); off unless set. */
    webhooks: z
      .object({
        /** where the receiver listens, "host:port" */
        listen: hostPort,
        /** the public URL the service posts to (register points the service here); its path is the receiver's */
        url: z
          .string()
          .url()
          .refine((u) => isUrlWithScheme(u), "expected an http:// or https:// URL"),
        /** Basic credentials the service must send (given to it by `faxgate webhooks register`) */
        username: z.string().regex(/^[^:\s]+$/, 'expected a user name without ":" or spaces'),
        password: z.string().min(12, "use at least 12 characters"),
        /** serve https with this certificate and key (else plain http, e.g. behind a TLS proxy) */
        tls: z.object({ cert: z.string(), key: z.string() }).strict().optional(),
        /** with webhooks on, status polling slows to this pace (the safety net for lost events) */
        pollInterval: duration({ min: "1s" }).prefault("5m"),
      })
      .strict()
      .optional(),
    /** The web console (docs/console.md); off unless set. Users sign in with users[].password. */
    web: webSchema.optional(),
    /**
     * NAME=VALUE lines (systemd EnvironmentFile format) that feed ${NAME} in this file, read by the
     * daemon (again on SIGHUP) and by every CLI command; its values win over the environment.
     */
    secretsFile: z.string().min(1).optional(),
    /** Mailboxes watched over IMAP for faxes to send (docs/mailbox.md); off unless set. */
    imap: z
      .object({ mailboxes: z.array(mailboxSchema).min(1) })
      .strict()
      .optional(),

    /** How long each kind of copy lives, the service's included (docs/compliance.md). */
    retention: retentionSchema.prefault({}),
    /** People from LDAP / Active Directory and SCIM besides users: (docs/identity.md); off unless set. */
    directory: directorySchema.optional(),
    /** Received faxes: kept in the queue, routed by rules (docs/inbound.md). */
    inbound: z
      .object({
        groups: z
          .record(z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/, "expected a short group name"), inboundGroup)
          .default({}),
        routes: z.array(inboundRoute).default([]),
        /** where a fax goes that no rule matched (default: the receiving user's mail) */
        default: z
          .array(inboundDelivery)
          .min(1)
          .default([{ receiver: true }]),
        /** how often unacknowledged faxes are looked for */
        escalationCheck: duration({ min: "100ms" }).prefault("60s"),
      })
      .strict()
      .prefault({}),
    /** Evidence bundles of sent faxes (docs/compliance.md, "Evidence of a sent fax"). */
    evidence: z
      .object({
        /**
         * the Ed25519 private key that signs manifests (PKCS#8, PEM or one base64 line), e.g.
         * ${FAXGATE_EVIDENCE_KEY} from the secrets file; required with a PostgreSQL queue, where every
         * gateway must sign with one key. Absent: the key made in the data folder on first use.
         */
        signingKey: secret.optional(),
        /** an RFC 3161 time-stamp authority asked for a token over every manifest */
        tsa: z
          .object({
            url: z
              .string()
              .url()
              .refine((u) => isUrlWithScheme(u), "expected an http:// or https:// URL"),
            /** extra trusted CA (PEM file) for an https authority, and for checking its tokens */
            caFile: z.string().optional(),
            timeout: duration({ min: "1s", max: "10m" }).prefault("30s"),
            /** the authority down or refusing: no bundle (refuse), or one without a token */
            whenDown: z.enum(["refuse", "without-token"]).default("refuse"),
          })
          .strict()
          .optional(),
      })
      .strict()
      .prefault({}),
    /** Fax-back reply sheets (docs/inbound.md, "Reply sheets"): their key, and how their codes are read back. */
    replySheets: z
      .object({
        /**
         * the key reply codes are signed with (32 random bytes, base64), e.g. ${FAXGATE_REPLY_KEY}
         * from the secrets file. Absent: one made on first use, kept in the shared store with a
         * PostgreSQL queue (every gateway of the fleet reads the same), else in the data folder
         */
        signingKey: secret.optional(),
        /** longest the look for a reply code on one received fax may take (rendering and reading) */
        timeout: duration({ min: "1s", max: "10m" }).prefault("60s"),
        /** pages of a received fax looked at for a code (the first ones: a reply sheet goes in front) */
        pages: z.number().int().min(1).max(50).default(4),
        /** address-space limit of the page renderer (pdftoppm) */
        memoryMb: z.number().int().min(128).default(512),
        /**
         * which received faxes are looked at for a reply code: auto (all, once this gateway or its
         * fleet has made a reply sheet, or signingKey is set; with ocr.enabled, all), always, off
         */
        look: z.enum(["auto", "always", "off"]).default("auto"),
      })
      .strict()
      .prefault({}),
    /** Office documents (docx, odt, xlsx...) are converted to PDF with LibreOffice before they are accepted. */
    office: z
      .object({
        /** the LibreOffice command or its path; false: office documents are refused */
        soffice: z.union([z.string().min(1), z.literal(false)]).default("soffice"),
        /** longest a conversion may run; waiting for a free converter is bounded by the same time */
        timeout: duration({ min: "1s", max: "10m" }).prefault("60s"),
        /** address-space limit of the converter process */
        memoryMb: z.number().int().min(256).default(1024),
        /** conversions at once */
        concurrency: z.number().int().min(1).max(4).default(1),
        /** documents of one user waiting or being converted at once; past it 451 (mail) or 429 (console) */
        queuePerUser: z.number().int().min(1).max(100).default(3),
        /**
         * isolation of the converter: auto (bubblewrap with no network and only the job's files,
         * else unshare -n, else none, with a warning), required (no conversion without bubblewrap), off
         */
        sandbox: z.enum(["auto", "required", "off"]).default("auto"),
        /** the user a daemon running as root runs the converter as (default faxgate-convert, else nobody) */
        user: z.string().min(1).optional(),
        /**
         * keep a LibreOffice started ahead of need in each slot (same sandbox and limits), so that a
         * document waits for its conversion only, not for LibreOffice to start
         */
        warm: z.boolean().default(true),
        /** documents one warm LibreOffice takes before a fresh one replaces it; 1: none ever sees another's */
        restartAfter: z.number().int().min(1).max(100).default(1),
        /**
         * warm LibreOffices kept started and unused, so that mails sent back to back each find one
         * ready while the used one is replaced (each one more holds about 200 MB)
         */
        warmPool: z.number().int().min(1).max(8).default(2),
      })
      .strict()
      .prefault({}),
    /** OCR of received (and, with sent, sent) faxes (docs/inbound.md, "Text of received faxes"): search and content rules. */
    ocr: z
      .object({
        /** read the text of every received fax with ocrmypdf and tesseract (installed separately) */
        enabled: z.boolean().default(false),
        /** sent faxes too (their documents once delivered, for search; docs/inbound.md "Text of sent faxes") */
        sent: z.boolean().default(false),
        /** the ocrmypdf command or its path */
        command: z.string().min(1).default("ocrmypdf"),
        /** tesseract languages, each installed (tesseract-ocr-eng, -deu...) */
        languages: z
          .array(z.string().regex(/^[a-z]{3}(_[a-z]+)?$/i, 'expected a tesseract language such as "eng"'))
          .min(1)
          .default(["eng"]),
        /** longest one fax's OCR may run */
        timeout: duration({ min: "10s", max: "1h" }).prefault("5m"),
        /** address-space limit of each OCR process */
        memoryMb: z.number().int().min(256).default(2048),
        /** faxes read at once (each uses about one core) */
        concurrency: z.number().int().min(1).max(16).default(1),
        /** runs of one fax before it is given up (kept without text, and said so) */
        attempts: z.number().int().min(1).max(20).default(3),
        /** isolation of OCR, as office.sandbox: auto, required, off */
        sandbox: z.enum(["auto", "required", "off"]).default("auto"),
        /**
         * how long a fax waits in the default route's inbox for its text (rules on text) or for
         * the look for its reply code (replySheets.look, with OCR on or off)
         */
        waitFor: duration({ min: "1s", max: "24h" }).prefault("10m"),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;
export type UserConfig = z.infer<typeof userSchema>;
export type SmtpConfig = NonNullable<Config["smtp"]>;

const SMTP_DEFAULTS: SmtpConfig = smtpSchema.parse({});

/**
 * The smtp section, or its defaults when there is none: the mail limits and the default country
 * also hold for mailboxes, print files and the CLI in a gateway that takes no SMTP.
 */
export function smtpSettings(config: Pick<Config, "smtp">): SmtpConfig {
  return config.smtp ?? SMTP_DEFAULTS;
}
export type SenderAuthConfig = SmtpConfig["senderAuth"];

/** A section's listener given on the command line (`faxgate start --admin-listen`): the section's defaults, then the file's keys. */
export function adminWithListen(admin: Config["admin"], listen: string): NonNullable<Config["admin"]> {
  return { ...adminSchema.parse({ listen }), ...admin, listen };
}
export function webWithListen(web: Config["web"], listen: string): NonNullable<Config["web"]> {
  return { ...webSchema.parse({ listen }), ...web, listen };
}

/** web.apiCallsPerMinute and apiCallsAtOnce: each console user's share of the API calls. */
export function consoleApiShare(config: Pick<Config, "web">): { perMinute: number; atOnce: number } {
  return {
    perMinute: config.web?.apiCallsPerMinute ?? webSchema.shape.apiCallsPerMinute.parse(undefined),
    atOnce: config.web?.apiCallsAtOnce ?? webSchema.shape.apiCallsAtOnce.parse(undefined),
  };
}

/** spool.addressWait (ms): print jobs left waiting still end after a restart without the spool. */
export function addressWaitMs(config: Pick<Config, "spool">): number {
  return config.spool?.addressWait ?? spoolSchema.shape.addressWait.parse(undefined);
}

/** admin.minFreeMb also bounds /readyz's disk check in a gateway without the admin listener. */
export function minFreeMb(config: Pick<Config, "admin">): number {
  return config.admin?.minFreeMb ?? adminSchema.shape.minFreeMb.parse(undefined);
}

/** notify.preferenceRefresh (ms): users' preferences are read for mail intake also without notify. */
export function preferenceRefreshMs(config: Pick<Config, "notify">): number {
  return config.notify?.preferenceRefresh ?? notifySchema.shape.preferenceRefresh.parse(undefined);
}
export type DnsConfig = Config["dns"];
export type SpoolConfig = NonNullable<Config["spool"]>;
export type NotifyConfig = NonNullable<Config["notify"]>;
export type QueueConfig = Config["queue"];
export type ApiConfig = Config["api"];
export type DestinationsConfig = Config["destinations"];
export type WebhooksConfig = NonNullable<Config["webhooks"]>;
export type OfficeConfig = Config["office"];
export type WebConfig = NonNullable<Config["web"]>;
export type MailBodyMode = SmtpConfig["body"];
export type MailboxConfig = z.infer<typeof mailboxSchema>;
export type PartialMode = "refuse" | "send";

export type InboundConfig = Config["inbound"];
export type OcrConfig = Config["ocr"];
export type ReplySheetsConfig = Config["replySheets"];
export type InboundRoute = InboundConfig["routes"][number];
export type InboundDelivery = InboundConfig["default"][number];

/** Keys whose values are secrets: masked whenever a config is printed. */
export const SECRET_KEYS = [
  "apiKey",
  "adminKey",
  "password",
  "signingKey",
  "clientSecret",
  "totpKey",
  "bindPassword",
  "token",
  "sealKey",
] as const;
