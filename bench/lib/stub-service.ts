// What the in-process SMTP benches need of the fax service and the users: one user, and a service
// that answers only /v1/me (the cover preference), so that nothing but intake is measured.
import type { UserConfig } from "../../src/config/schema.js";
import type { FaxApi, User } from "../../src/fax/types.js";

export function benchUser(email = "bench@example.com"): UserConfig {
  return { name: "bench", email, aliases: [], apiKey: "bench-key" };
}

export const stubApi = {
  me: async () =>
    ({
      emailToFaxCoverPageOption: false,
      firstName: "Bench",
      lastName: null,
      account: { timezone: "UTC" },
    }) as unknown as User,
} as unknown as FaxApi;
