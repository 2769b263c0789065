// The readers (MIME parsing, PDF text on worker threads) and the office converter, shared by
// mail, the print folders, the mailboxes and the console: one pool, one concurrency limit, turns
// per user in front of it. With office.sandbox required and no isolation here, the start fails.
import type { Config } from "../config/index.js";
import { ConvertQueue, OfficeConverter, ReaderPool, type OfficeOptions } from "../intake/index.js";
import { childLog, type Logger } from "../log/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";

export interface Converters {
  readers: ReaderPool;
  office: OfficeConverter;
  /** Conversions in turn per user, in front of `office` (src/intake/office/convert-queue.ts). */
  convertQueue: ConvertQueue;
  parts: Part[];
}

/** The converter's options from the config, whose schema holds every default (commands use it too). */
export function officeOptions(office: Config["office"], logger?: Logger): OfficeOptions {
  const { timeout, queuePerUser: _, ...rest } = office;
  return { ...rest, timeoutMs: timeout, ...(logger ? { logger } : {}) };
}

export function createConverters({ config, logger }: Core): Converters {
  const log = childLog(logger, { component: "office" });
  const readers = new ReaderPool();
  const office = new OfficeConverter(officeOptions(config.office, log));
  const convertQueue = new ConvertQueue(office, { perUser: config.office.queuePerUser, logger: log });
  const officePart: Part = {
    name: "office",
    start: async () => {
      if (!office.available()) return;
      const p = await office.protections();
      logger.info({ ...p.summary }, "OFFICE converter protections");
      for (const warning of p.warnings) logger.warn({ warning }, "OFFICE converter protection missing");
      if (!p.ok)
        throw new Error(
          `office.sandbox is required, but the converter cannot be isolated here: ${p.warnings.join("; ")}`,
        );
      // started ahead of need, in the background: the daemon does not wait for LibreOffice
      office.warmUp();
      void office.warmReady().then((ready) => {
        if (ready)
          log.info(
            { warmPool: config.office.warmPool, restartAfter: config.office.restartAfter },
            "OFFICE warm converter ready",
          );
      });
    },
    stop: async () => {
      await convertQueue.close();
      await office.close();
    },
  };
  return { readers, office, convertQueue, parts: [{ name: "readers", stop: () => readers.close() }, officePart] };
}
