// Outcome and inbound mail (notify), received faxes (kept and routed by inbound.routes, whichever
// path saw them first: the inbound poll or a webhook push) and the shared-inbox escalation.
import {
  pushedFaxHandler,
  InboxEscalation,
  ReceivedFaxIntake,
  InboundPoller,
  TextRouting,
  ReplyRouting,
} from "../inbound/index.js";
import { Notifier } from "../notify/index.js";
import type { FaxRecord } from "../fax/index.js";
import { addressWaitMs, smtpSettings } from "../config/index.js";
import type { OcrDuty } from "../ocr/index.js";
import type { Core } from "./core.js";
import type { OcrParts } from "./ocr.js";
import type { Part } from "./part.js";
import { replyKeyOf, replySheetsInUse } from "./reply-key.js";
import { childLog } from "../log/index.js";

export interface NotifyParts {
  notifier: Notifier | null;
  received: ReceivedFaxIntake;
  escalation: InboxEscalation;
  /** A received fax pushed by the service; null when inbound faxes are not followed. */
  pushedFax: ((rec: FaxRecord, serviceUserId: string | null) => Promise<boolean>) | null;
  parts: Part[];
}

export function createNotify(
  core: Core,
  consoleUrl: () => string | null,
  extra: { connectorQueued?: () => void; ocr?: Pick<OcrParts, "duty" | "reads"> } = {},
): NotifyParts {
  const { connectorQueued } = extra;
  const ocr = extra.ocr?.duty ?? null;
  const reads = extra.ocr?.reads ?? false;
  const { config, live, store, api, clock, metrics, destinations } = core;
  const log = (component: string) => childLog(core.logger, { component });
  const common = { store, clientFor: (user: string) => api.clientFor(user), clock, metrics, destinations };
  const users = () => live.users();
  const notifier = notifierOf(core, common, consoleUrl);
  const received = new ReceivedFaxIntake({
    ...common,
    inbound: () => live.config().inbound,
    users,
    me: (user) => core.directory.get(user),
    dataDir: config.data,
    logger: log("inbound"),
    ledger: core.ledger,
    ...(connectorQueued ? { connectorQueued } : {}),
    ...(ocr
      ? { text: { poke: () => ocr.poke(), waitForMs: config.ocr.waitFor, reads, replies: lookFor(core, reads) } }
      : {}),
  });
  const { replies, textRouting } = ocr ? textDuties(core, received, ocr) : { replies: null, textRouting: null };
  const escalation = new InboxEscalation({
    store,
    inbound: () => live.config().inbound,
    users,
    logger: log("inbox"),
    clock,
  });
  const { poller, pushedFax } = inboundFollowing(core, common, received);
  const parts: Part[] = [
    { name: "notifier", start: () => notifier?.start(), stop: () => notifier?.stop() },
    { name: "inbox", start: () => escalation.start(), stop: () => escalation.stop() },
    { name: "inbound", start: () => poller?.start(), stop: () => poller?.stop() },
    {
      name: "text-routing",
      start: () => textRouting?.start(),
      stop: () => {
        replies?.stop();
        return textRouting?.stop();
      },
    },
  ];
  return { notifier, received, escalation, pushedFax, parts };
}

type Common = {
  store: Core["store"];
  clientFor: (user: string) => ReturnType<Core["api"]["clientFor"]>;
  clock: Core["clock"];
  metrics: Core["metrics"];
  destinations: Core["destinations"];
};

/** Outcome mail, when `notify` is configured. */
function notifierOf(core: Core, common: Common, consoleUrl: () => string | null): Notifier | null {
  const { config, live, directory } = core;
  const users = () => live.users();
  const log = (component: string) => childLog(core.logger, { component });
  return config.notify
    ? new Notifier({
        ...common,
        notify: config.notify,
        users,
        directory,
        dataDir: config.data,
        logger: log("notify"),
        consoleUrl,
        addressWaitMs: addressWaitMs(config),
        confirmWaitMs: smtpSettings(config).senderAuth.confirmWait,
        defaultCountryCode: () => smtpSettings(live.config()).defaultCountryCode,
        ledger: core.ledger,
      })
    : null;
}

/** Received faxes followed: the inbound poll, and the service's pushes handled through it. */
function inboundFollowing(core: Core, common: Common, received: ReceivedFaxIntake) {
  const { config, live, directory } = core;
  const users = () => live.users();
  const log = (component: string) => childLog(core.logger, { component });
  const poller = config.notify?.inbound.enabled
    ? new InboundPoller({
        ...common,
        notify: config.notify,
        users,
        logger: log("inbound"),
        intake: received,
      })
    : null;
  const pushedFax = poller
    ? pushedFaxHandler({
        users,
        me: (user) => directory.get(user),
        clientFor: common.clientFor,
        pollAll: () => poller.runOnce(),
        intake: received,
        logger: core.logger,
      })
    : null;
  return { poller, pushedFax };
}

/**
 * Whether a received fax is looked at for a reply code now (replySheets.look): with OCR reading
 * every fax the look costs little more, so always; without, once the fleet has made a sheet.
 */
function lookFor(core: Core, reads: boolean): () => Promise<boolean> {
  const look = core.config.replySheets.look;
  if (look === "off") return async () => false;
  if (look === "always" || reads) return async () => true;
  return replySheetsInUse(core);
}

/**
 * What runs with OCR: reply codes looked for before each fax's text is read, and faxes held for
 * their text (match.text) routed when it is known or the wait is over.
 */
function textDuties(
  core: Core,
  received: ReceivedFaxIntake,
  ocr: OcrDuty,
): { replies: ReplyRouting; textRouting: TextRouting } {
  const { config, store, clock } = core;
  const log = childLog(core.logger, { component: "inbound" });
  const replies = new ReplyRouting({
    store,
    intake: received,
    key: replyKeyOf(core),
    timeoutMs: config.replySheets.timeout,
    pages: config.replySheets.pages,
    memoryMb: config.replySheets.memoryMb,
    sandbox: config.ocr.sandbox,
    logger: log,
  });
  ocr.beforeText((faxId, pdf) => replies.look(faxId, pdf));
  const textRouting = new TextRouting({ store, intake: received, logger: log, clock, intervalMs: 5000 });
  ocr.on("known", () => textRouting.wake());
  return { replies, textRouting };
}
