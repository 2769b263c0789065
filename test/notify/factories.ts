// Plain Job / Recipient / User values for the composer tests (the integration tests use real ones).
import type { User } from "../../src/fax/types.js";
import type { Job, Recipient } from "../../src/store/types.js";

export function recipient(over: Partial<Recipient> = {}): Recipient {
  return {
    jobId: "J1",
    idx: 0,
    number: "+15551234567",
    name: null,
    state: "delivered",
    attempts: 1,
    nextAttemptAt: null,
    lastError: null,
    messageId: "m-1",
    sendId: "s-1",
    resultCode: "0",
    resultInfo: "OK",
    errorCode: null,
    errorInfo: null,
    pages: 3,
    duration: 65,
    faxAttempt: 1,
    lockedBy: null,
    lockedUntil: null,
    faxTries: 0,
    pagesCount: 3,
    apiCalls: 1,
    budgetFrom: "2026-11-21T22:00:00.000Z",
    createdAt: "2026-11-21T22:00:00.000Z",
    updatedAt: "2026-11-21T22:01:00.000Z",
    sentAt: "2026-11-21T22:00:05.000Z",
    finishedAt: "2026-11-21T22:01:00.000Z",
    ...over,
  };
}

export function job(over: Partial<Job> = {}, recipients: Array<Partial<Recipient>> = [{}]): Job {
  return {
    id: "J1",
    source: "smtp",
    user: "alice",
    state: "delivered",
    cover: { enabled: false },
    documents: [{ path: "/x/a.pdf", name: "a.pdf", contentType: "application/pdf", bytes: 100 }],
    original: null,
    scheduledAt: null,
    tags: [],
    dedupeKey: null,
    meta: {},
    corruptReason: null,
    createdAt: "2026-11-21T22:00:00.000Z",
    updatedAt: "2026-11-21T22:01:00.000Z",
    finishedAt: "2026-11-21T22:01:00.000Z",
    recipients: recipients.map((r, idx) => recipient({ idx, ...r })),
    ...over,
  };
}

export function me(over: Partial<User> = {}): User {
  return {
    userId: "u1",
    accountId: "a1",
    email: "alice@example.com",
    firstName: "Alice",
    lastName: null,
    userRole: "admin",
    phone: "15550000000",
    faxCsid: "ACME",
    faxCallerId: "5550000000",
    isEmailConfirmed: true,
    createdAt: "2026-01-01T00:00:00.000Z",
    emailNotifySendOption: "All",
    emailNotifyReceiveOption: "All",
    emailNotifySendIncAttachment: false,
    emailNotifyReceiveIncAttachment: false,
    emailToFaxCoverPageOption: false,
    faxNumbers: [],
    account: {
      uuid: "a1",
      accountNumber: "1",
      accountName: "Acme",
      parentId: null,
      timezone: "America/New_York",
      emailToFax: "true",
      allowFaxAttachments: "true",
      usersTokenLife: "14400",
      emailNotifySendOption: "All",
      emailNotifyReceiveOption: "All",
      emailNotifySendIncAttachment: "false",
      emailNotifyReceiveIncAttachment: "false",
      faxCsid: "ACME",
      faxCallerId: "5550000000",
    },
    ...over,
  };
}
