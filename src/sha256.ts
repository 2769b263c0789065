// sha256 in hex of a string or bytes, in one call. crypto.hash (Node 20.12 and 21.7 on) makes no
// Hash object: createHash builds one with its stream state and takes three calls. A mail takes
// such a hash on the main thread (its duplicate key: 26-31 us a mail that way, 10-14 this way)
// and on the intake thread (its ledger row's seal); issue 54, docs/bench.md "Where a
// connection's cost goes". Node 20 before 20.12 has only createHash.
import * as crypto from "node:crypto";

type OneShot = (algorithm: string, data: string | Uint8Array, encoding: "hex") => string;

const oneShot = (crypto as { hash?: OneShot }).hash;

/** The SHA-256 of `data` (a string as UTF-8), as 64 lowercase hex digits. */
export const sha256Hex: (data: string | Uint8Array) => string = oneShot
  ? (data) => oneShot("sha256", data, "hex")
  : (data) => crypto.createHash("sha256").update(data).digest("hex");
