// The account every test emulator starts with. Keys are fixed strings so tests can name them.
import type { SeedData } from "../../src/emulator/emulator.js";

export const TEST_TAGS = {
  billing: "00000000-0000-4000-8000-00000000b111",
  urgent: "00000000-0000-4000-8000-00000000a222",
} as const;

export const TEST_SEED: SeedData = {
  account: { accountName: "Acme Clinic", timezone: "America/New_York" },
  tags: [
    { uuid: TEST_TAGS.billing, name: "Billing", color: "2e86de" },
    { uuid: TEST_TAGS.urgent, name: "Urgent", color: "e74c3c" },
  ],
  users: [
    {
      email: "admin@example.com",
      firstName: "Ada",
      lastName: "Admin",
      userRole: "admin",
      emailNotifySendOption: "All",
      emailNotifySendIncAttachment: false,
      emailNotifyReceiveOption: "All",
      emailNotifyReceiveIncAttachment: false,
      emailToFaxCoverPageOption: false,
      keys: [{ name: "test admin", access: "admin", token: "test-admin-key" }],
      contacts: [{ name: "Initech Front Desk", faxNumber: "(555) 010-0300", isPublic: true }],
    },
    {
      email: "alice@example.com",
      firstName: "Alice",
      lastName: "Archer",
      userRole: "user",
      emailNotifySendOption: "All",
      emailNotifySendIncAttachment: true,
      emailNotifyReceiveOption: "All",
      emailNotifyReceiveIncAttachment: true,
      emailToFaxCoverPageOption: false,
      keys: [
        { name: "alice printer", access: "print_driver", token: "alice-print-key" },
        { name: "alice base", access: "base", token: "alice-base-key" },
      ],
      contacts: [
        { name: "Acme Billing", faxNumber: "(555) 010-0100", email: "billing@acme.example" },
        { name: "Globex", isOrganization: true, contacts: [{ name: "Globex Accounts", faxNumber: "(555) 010-0200" }] },
      ],
    },
    {
      email: "bob@example.com",
      firstName: "Bob",
      lastName: "Baker",
      userRole: "user",
      emailNotifySendOption: "Failure",
      emailNotifySendIncAttachment: false,
      emailNotifyReceiveOption: "None",
      emailNotifyReceiveIncAttachment: false,
      emailToFaxCoverPageOption: true,
      keys: [{ name: "bob printer", access: "print_driver", token: "bob-print-key" }],
    },
  ],
};

/**
 * TEST_SEED with more print keys for alice and bob (each a key of its own, as `faxgate keys
 * create` makes): for a gateway whose extra users act as alice or bob at the service, since the
 * config refuses two users with one key.
 */
export function seedWithKeys(extra: { alice?: string[]; bob?: string[] }): SeedData {
  const more = (email: string) =>
    (email === "alice@example.com" ? extra.alice : email === "bob@example.com" ? extra.bob : undefined) ?? [];
  return {
    ...TEST_SEED,
    users: TEST_SEED.users!.map((u) => ({
      ...u,
      keys: [
        ...(u.keys ?? []),
        ...more(u.email).map((token) => ({ name: token, access: "print_driver" as const, token })),
      ],
    })),
  };
}
