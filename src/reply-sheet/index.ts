// The face of reply-sheet/: what other folders may use of it, re-exported from the files that define it.
export { encodeReplyCode, verifyReplyCode } from "./reply-code.js";
export type { ReplyCodeVerdict, ReplyTarget } from "./reply-code.js";
export { loadReplyKey } from "./reply-key.js";
export { replySheetPage, withReplySheet } from "./reply-page.js";
export { scanForReplyCodes } from "./reply-decode.js";
export type { ReplyScan } from "./reply-decode.js";
