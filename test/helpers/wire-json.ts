// JSON read back from the wire (the emulator's answers, a webhook's body, the console's API).
// Tests read it loosely on purpose: each field they read is checked by the assertion reading it,
// and a typed copy of every answer shape would only restate the implementation.
// biome-ignore lint/suspicious/noExplicitAny: the one loose type, for wire JSON that assertions check
export type WireJson = any;
