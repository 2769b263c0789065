// Types of the cloud fax service API (docs/fax-api.md), as callers of the client see them.
// Where the service has two documented variants, the client normalises to the shapes below;
// the raw variant shapes are described beside the fields that differ.

export type AccessLevel = "admin" | "base" | "print_driver";
export const ACCESS_LEVELS: readonly AccessLevel[] = ["admin", "base", "print_driver"];

/** Which documented response shapes a service (or the emulator) uses. */
export type ApiVariant = "a" | "b";

export interface Account {
  uuid: string;
  accountNumber: string;
  accountName: string;
  parentId: string | null;
  /** IANA zone name, e.g. America/New_York */
  timezone: string;
  emailToFax: string;
  storeFaxesTime?: string;
  allowFaxAttachments: string;
  usersTokenLife: string;
  emailNotifySendOption: string;
  emailNotifyReceiveOption: string;
  emailNotifySendIncAttachment: string;
  emailNotifyReceiveIncAttachment: string;
  faxCsid: string;
  faxCallerId: string;
}

/** GET /v1/me */
export interface User {
  userId: string;
  accountId: string;
  email: string;
  firstName: string;
  lastName: string | null;
  userRole: string;
  companyName?: string;
  phone: string;
  faxCsid: string;
  faxCallerId: string;
  lastLoginIp?: string;
  lastLoginDate?: string;
  isEmailConfirmed: boolean;
  createdAt: string;
  /** 'All' | 'Failure' | 'None' (others possible) */
  emailNotifySendOption: string;
  emailNotifyReceiveOption: string;
  emailNotifySendIncAttachment: boolean;
  emailNotifyReceiveIncAttachment: boolean;
  emailToFaxCoverPageOption: boolean;
  account: Account;
  faxNumbers: unknown[];
}

export interface ApiKeyUser {
  uuid: string;
  userId?: string;
  email: string;
  firstName: string;
  lastName: string | null;
  accountId: string;
  avatar?: string;
  avatarPath?: string;
}

/**
 * An API key, normalised: `access` is always set (variant B's string, or the single/first
 * level of variant A's `accessLevel` array), and `accessLevel` always lists the levels.
 */
export interface ApiKey {
  uuid: string;
  userId: string;
  accountId: string;
  name: string;
  /** Present on create; the secret itself. Never log it. */
  token?: string;
  access: AccessLevel;
  accessLevel: AccessLevel[];
  expiresAt: string | null;
  createdAt: string;
  updatedAt: string;
  user?: ApiKeyUser;
}

export interface CreateApiKeyRequest {
  name: string;
  userId: string;
  access: AccessLevel;
  expiresAt?: string;
}

export interface UpdateApiKeyRequest {
  name?: string;
  access?: AccessLevel;
  expiresAt?: string;
}

export interface Contact {
  uuid: string;
  userId: string;
  name: string;
  email: string | null;
  /** (***) ***-**** */
  faxNumber: string | null;
  phoneNumber: string | null;
  isOrganization: boolean;
  organizationId: string | null;
  isPublic: boolean;
  publicEditable: boolean;
  /** On organization rows of a list: the member contacts. */
  contacts?: Contact[];
}

export interface ContactInput {
  name?: string;
  email?: string;
  faxNumber?: string;
  phoneNumber?: string;
  organizationId?: string;
  isPublic?: boolean;
  publicEditable?: boolean;
  /** create only */
  isOrganization?: boolean;
}

export interface ListContactsQuery {
  userId?: string;
  offset?: number;
  limit?: number;
  order?: string;
  query?: string;
}

/** Normalised paging envelope (both history layouts and the contacts list map to this). */
export interface Page<T> {
  count: number;
  rows: T[];
  limit: number;
  offset: number;
}

export interface Tag {
  uuid: string;
  createdBy: string;
  name: string;
  color: string;
  isPublic: number;
}

/** 'processing' | 'transmitting' | 'scheduled' | 'success' | 'failed' | 'cancelled' */
export type FaxStatus = string;

export interface FaxRecord {
  messageId: string;
  messageNumber?: string;
  accountId?: string;
  channelType?: string;
  direction?: "inbound" | "outbound" | string;
  status: FaxStatus;
  createdAt?: string;
  resolvedDate?: string | null;
  deletedAt?: string | null;
  deliveryId?: string;
  duration?: number;
  errorCode?: string | null;
  errorInfo?: string | null;
  resultCode?: string | null;
  resultInfo?: string | null;
  faxAttempt?: number;
  faxCallerId?: string;
  faxCsid?: string;
  faxDetected?: boolean;
  faxECM?: number;
  faxNumber?: string;
  faxProtocol?: number;
  faxSpeed?: number;
  faxbridgeId?: number | null;
  faxbridge?: { deviceCode: string; name: string; isActive: boolean } | null;
  isArchived?: boolean;
  isFilePurged?: boolean;
  isRead?: boolean;
  pagesCount?: number;
  pagesComplete?: number;
  contacts?: unknown[];
  tags?: Tag[];
  tagId?: string;
  users?: Array<{ userId: string; firstName: string; lastName: string | null; email: string }>;
  account?: { uuid: string; supportCode: string; companyName: string };
  cf?: Record<string, string>;
  subject?: string;
  recipientName?: string;
}

/** A document to upload: streamed from disk, never read whole into memory. */
export interface FaxFile {
  path: string;
  /** File name shown to the service; defaults to the path's base name. */
  name?: string;
  contentType: string;
}

export interface CoverFields {
  coverPage?: boolean;
  coverPageId?: string;
  recipientName?: string;
  senderName?: string;
  subject?: string;
  callerId?: string;
  notes?: string;
  recipientCompany?: string;
  recipientPhone?: string;
  senderCompany?: string;
  senderPhone?: string;
}

/** What the caller of a send is told as it goes (the dispatcher's durable "call left" mark). */
export interface SendHooks {
  /**
   * Awaited once the gate (rate, concurrency, the fleet's slot) let the call go, just before the
   * request is written: nothing has left before it resolves, and if it throws nothing leaves.
   */
  leaving?: () => Promise<void>;
}

export interface SendFaxRequest extends CoverFields {
  faxNumber: string;
  files?: FaxFile[];
  tags?: string[];
  cf?: Record<string, string>;
  scheduledDate?: string;
}

export interface SendManyRequest extends CoverFields {
  recipientFax?: string[];
  recipientContacts?: string[];
  files?: FaxFile[];
  tags?: string[];
  cf?: Record<string, string>;
  scheduledDate?: string;
}

/** One per-recipient error of send-to-many or resend, normalised from both seen shapes. */
export interface RecipientError {
  recipientFax: string | null;
  /** e.g. "InvalidInputError" */
  name: string;
  message: string;
  /** the raw `error` text */
  error: string;
}

export interface SendManyResult {
  success: FaxRecord[];
  errors: RecipientError[];
}

export interface HistoryQuery {
  offset?: number;
  limit?: number;
  direction?: "all" | "inbound" | "outbound";
  status?: "all" | "failed" | "success" | "processing";
  /** YYYY-MM-DD */
  fromDate?: string;
  toDate?: string;
  userId?: string;
  accountId?: string;
  query?: string;
  tags?: string[];
  isArchived?: boolean;
  /** e.g. ['tags','contacts']; sent as `include` and `includes` as the variant requires */
  include?: Array<"tags" | "contacts">;
}

/** What callers see of the client: implemented by FaxClient in ./client.ts. */
export interface FaxApi {
  ping(): Promise<unknown>;
  me(): Promise<User>;

  createApiKey(req: CreateApiKeyRequest): Promise<ApiKey>;
  updateApiKey(keyId: string, req: UpdateApiKeyRequest): Promise<ApiKey>;
  listApiKeys(userId?: string): Promise<ApiKey[]>;
  deleteApiKey(keyId: string): Promise<void>;

  listContacts(query?: ListContactsQuery): Promise<Page<Contact>>;
  createContact(input: ContactInput, userId?: string): Promise<Contact>;
  updateContact(contactId: string, input: ContactInput): Promise<Contact>;
  deleteContact(contactId: string): Promise<void>;
  deleteContacts(contactIds: string[]): Promise<void>;

  sendFax(req: SendFaxRequest, hooks?: SendHooks): Promise<FaxRecord>;
  sendFaxToMany(req: SendManyRequest, hooks?: SendHooks): Promise<SendManyResult>;
  resendFax(messageId: string, recipientFax?: string): Promise<SendManyResult>;
  updateFax(messageId: string, update: { isArchived: boolean }): Promise<FaxRecord>;
  /** Streams the PDF to `destPath` (temp name, then rename); returns bytes written. */
  downloadFax(messageId: string, destPath: string): Promise<{ bytes: number; fileName: string | null }>;
  faxInfo(messageId: string): Promise<FaxRecord>;
  deleteFax(messageId: string): Promise<void>;
  history(query?: HistoryQuery): Promise<Page<FaxRecord>>;
  /** Walks every page of history from query.offset on. */
  historyAll(query?: HistoryQuery): AsyncIterable<FaxRecord>;

  coverPages(): Promise<unknown[]>;
}
