// What the queue's tests need to know of the test emulator: which key sends, and the shape of
// GET /_emulator/faxes rows they check.
import { TEST_KEYS } from "../helpers/emulator.js";

/** Alice's base key: may send faxes and read her history. */
export const EMU_KEY = TEST_KEYS.aliceBase;

export interface EmulatedFax {
  messageId: string;
  faxNumber: string;
  status: string;
  cf: Record<string, string | undefined>;
  subject: string | null;
  recipientName: string | null;
  tags: string[];
  createdAt: string;
}
