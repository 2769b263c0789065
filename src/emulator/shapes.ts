// Response bodies in the shapes of the chosen API variant. Requests in either shape are accepted
// elsewhere; only what goes out differs.
import type { Behaviour } from "./behaviour.js";
import type { ApiVariant } from "./types.js";
import type { AccountRow, ContactRow, FaxRow, KeyRow, TagRow, UserRow } from "./db.js";
import { faxState } from "./lifecycle.js";

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const flag = (n: number): string => (n ? "true" : "false");

export function renderAccount(a: AccountRow, u: UserRow, variant: ApiVariant): Record<string, unknown> {
  return {
    uuid: a.uuid,
    accountNumber: a.accountNumber,
    accountName: a.accountName,
    parentId: null,
    timezone: a.timezone,
    emailToFax: "true",
    ...(variant === "a" ? { storeFaxesTime: String(a.storeFaxesTime ?? 0) } : {}),
    allowFaxAttachments: "true",
    usersTokenLife: "14400",
    emailNotifySendOption: u.emailNotifySendOption,
    emailNotifyReceiveOption: u.emailNotifyReceiveOption,
    emailNotifySendIncAttachment: flag(u.emailNotifySendIncAttachment),
    emailNotifyReceiveIncAttachment: flag(u.emailNotifyReceiveIncAttachment),
    faxCsid: a.faxCsid,
    faxCallerId: a.faxCallerId,
  };
}

export function renderUser(u: UserRow, a: AccountRow, variant: ApiVariant): Record<string, unknown> {
  return {
    userId: u.uuid,
    accountId: u.accountId,
    email: u.email,
    firstName: u.firstName,
    lastName: u.lastName,
    userRole: u.userRole,
    ...(variant === "a"
      ? { companyName: a.accountName, lastLoginIp: "127.0.0.1", lastLoginDate: iso(u.createdAt) }
      : {}),
    phone: u.phone,
    faxCsid: u.faxCsid,
    faxCallerId: u.faxCallerId,
    isEmailConfirmed: true,
    createdAt: iso(u.createdAt),
    emailNotifySendOption: u.emailNotifySendOption,
    emailNotifyReceiveOption: u.emailNotifyReceiveOption,
    emailNotifySendIncAttachment: u.emailNotifySendIncAttachment === 1,
    emailNotifyReceiveIncAttachment: u.emailNotifyReceiveIncAttachment === 1,
    emailToFaxCoverPageOption: u.emailToFaxCoverPageOption === 1,
    account: renderAccount(a, u, variant),
    faxNumbers: [],
  };
}

export function renderKey(
  k: KeyRow,
  u: UserRow | undefined,
  variant: ApiVariant,
  withUser: boolean,
): Record<string, unknown> {
  return {
    uuid: k.uuid,
    userId: k.userId,
    accountId: k.accountId,
    name: k.name,
    token: k.token,
    ...(variant === "a" ? { accessLevel: [k.access] } : { access: k.access }),
    expiresAt: iso(k.expiresAt),
    createdAt: iso(k.createdAt),
    updatedAt: iso(k.updatedAt),
    ...(withUser && u
      ? {
          user: {
            uuid: u.uuid,
            ...(variant === "a" ? { userId: u.uuid } : {}),
            email: u.email,
            firstName: u.firstName,
            lastName: u.lastName,
            accountId: u.accountId,
            avatar: "",
            avatarPath: "",
          },
        }
      : {}),
  };
}

export function renderContact(c: ContactRow, members?: ContactRow[]): Record<string, unknown> {
  return {
    uuid: c.uuid,
    userId: c.userId,
    name: c.name,
    email: c.email,
    faxNumber: c.faxNumber,
    phoneNumber: c.phoneNumber,
    isOrganization: c.isOrganization === 1,
    organizationId: c.organizationId,
    isPublic: c.isPublic === 1,
    publicEditable: c.publicEditable === 1,
    createdAt: iso(c.createdAt),
    updatedAt: iso(c.updatedAt),
    ...(members ? { contacts: members.map((m) => renderContact(m)) } : {}),
  };
}

export function renderTag(t: TagRow): Record<string, unknown> {
  return { uuid: t.uuid, createdBy: t.createdBy, name: t.name, color: t.color, isPublic: t.isPublic };
}

export interface FaxExtras {
  /** how custom fields appear (the cfMode switch); default kept */
  cfMode?: Behaviour["cfMode"];
  tags?: TagRow[];
  contacts?: ContactRow[];
  users?: UserRow[];
  account?: AccountRow;
}

export function renderFax(f: FaxRow, now: number, extras: FaxExtras = {}): Record<string, unknown> {
  const s = faxState(f, now);
  return {
    messageId: f.messageId,
    // while processing the service has not numbered the fax nor handed it to a line yet
    messageNumber: s.numbered ? String(f.messageNumber) : null,
    accountId: f.accountId,
    userId: f.userId,
    channelType: f.channelType,
    direction: f.direction,
    status: s.status,
    createdAt: iso(f.createdAt),
    scheduledDate: iso(f.scheduledAt),
    resolvedDate: s.resolvedDate,
    deletedAt: iso(f.deletedAt),
    deliveryId: s.numbered ? `dlv-${f.messageNumber}` : null,
    duration: s.duration,
    resultCode: s.resultCode,
    resultInfo: s.resultInfo,
    errorCode: s.errorCode,
    errorInfo: s.errorInfo,
    faxAttempt: s.faxAttempt,
    faxCallerId: f.faxCallerId,
    faxCsid: f.faxCsid,
    faxDetected: s.faxDetected,
    faxECM: 1,
    faxNumber: f.faxNumber,
    faxProtocol: 1,
    faxSpeed: 14400,
    faxbridgeId: null,
    faxbridge: null,
    isArchived: f.isArchived === 1,
    isFilePurged: f.filePurgedAt !== null && f.filePurgedAt !== undefined,
    isRead: f.isRead === 1,
    pagesCount: f.pagesCount,
    pagesComplete: s.pagesComplete,
    subject: f.subject,
    recipientName: f.recipientName,
    ...cfField(f, extras.cfMode ?? "kept"),
    ...(extras.tags ? { tags: extras.tags.map(renderTag) } : {}),
    ...(extras.contacts ? { contacts: extras.contacts.map((c) => renderContact(c)) } : {}),
    ...(extras.users
      ? {
          users: extras.users.map((u) => ({
            userId: u.uuid,
            firstName: u.firstName,
            lastName: u.lastName,
            email: u.email,
          })),
        }
      : {}),
    ...(extras.account
      ? {
          account: {
            uuid: extras.account.uuid,
            supportCode: extras.account.supportCode,
            companyName: extras.account.accountName,
          },
        }
      : {}),
  };
}

function cfField(f: FaxRow, mode: Behaviour["cfMode"]): { cf?: Record<string, string> } {
  if (mode === "dropped") return {};
  if (mode === "empty") return { cf: {} };
  return { cf: JSON.parse(f.cf) as Record<string, string> };
}
