// The one vocabulary for fax results: what a failed fax's resultCode/resultInfo (and
// errorCode/errorInfo) mean to us, kept as data. The service's full list of codes is not public
// (evidence: 6100 "Fax Number Busy", 6000 "Fax Connect Failed", 5100 "Fax Request Blocked",
// 5200 "Fax Rendering Issue"), so rules match on the code AND on the words, and a result no rule
// knows is neither final at once nor retried forever: it gets `unknownResultTries` more tries.
// Every regex here is a plain alternation of words (no nested repetition): linear on any input.
// Operator rules (queue.resultRules) come first and match a literal phrase, never a regex.

export type ResultAction = "retry" | "fail";

export interface ResultRule {
  name: string;
  /** Codes as the service sends them (resultCode or errorCode), compared as trimmed text. */
  codes?: readonly string[];
  /** Matched against resultInfo and errorInfo. */
  text?: RegExp;
  action: ResultAction;
  /** Plain words for people: "busy", "no answer". */
  words: string;
}

/** An operator's rule from the config: a code, a phrase (case-insensitive, literal), or both. */
export interface OperatorResultRule {
  code?: string | string[];
  text?: string;
  action: ResultAction;
  words?: string;
}

export const BUILT_IN_RESULT_RULES: readonly ResultRule[] = [
  // 17/18/49/50 and BUSY/NO_ANSWER/... are the codes of the first emulator; kept so that queues
  // written before the 4-digit family still read right.
  { name: "busy", codes: ["6100", "17", "BUSY"], text: /\bbusy\b/i, action: "retry", words: "busy" },
  {
    name: "no answer",
    codes: ["18", "NO_ANSWER"],
    text: /\bno answer\b|\bnot answer(?:ed)?\b|\bno response\b|\bring(?:ing)? no answer\b|\bunanswered\b/i,
    action: "retry",
    words: "no answer",
  },
  {
    name: "no fax tone",
    codes: ["49", "NO_FAX_TONE"],
    text: /\bno fax (?:tone|machine|detected)\b|\bvoice (?:line|call|answer)\b|\bhuman answer\b|\bnot a fax\b/i,
    action: "fail",
    words: "no fax machine answered (a voice line or wrong number)",
  },
  {
    name: "blocked",
    codes: ["5100"],
    text: /\bblocked\b|\brejected\b|\brefused\b|\bnot allowed\b|\bdisabled\b|\bblacklist/i,
    action: "fail",
    words: "the fax service blocked this fax",
  },
  {
    name: "bad number",
    text: /\binvalid (?:fax )?number\b|\bnot in service\b|\bdisconnected\b|\bunallocated\b|\bwrong number\b/i,
    action: "fail",
    words: "the number is not a working fax number",
  },
  {
    name: "rendering",
    codes: ["5200"],
    text: /\brender(?:ing)?\b|\bconversion\b|\bconvert\b|\bcorrupt\b|\bunsupported (?:file|format)\b/i,
    action: "fail",
    words: "the document could not be prepared for faxing",
  },
  {
    name: "connect failed",
    codes: ["6000"],
    text: /\bconnect(?:ion)? failed\b|\bcould not connect\b|\bno carrier\b|\bno dial ?tone\b|\bnetwork congestion\b/i,
    action: "retry",
    words: "the call could not be connected",
  },
  {
    name: "transmission",
    codes: ["50", "TRANSMISSION_ERROR"],
    text: /\btransmission\b|\bdropped\b|\binterrupted\b|\bline (?:noise|error)\b|\bcommunication error\b|\bhung up\b/i,
    action: "retry",
    words: "the call dropped during the transmission",
  },
];

export interface ResultFields {
  resultCode?: string | null;
  resultInfo?: string | null;
  errorCode?: string | null;
  errorInfo?: string | null;
}

export interface ResultMeaning {
  /** The rule that matched, or null for a result no rule knows. */
  rule: string | null;
  action: ResultAction;
  /** Plain words; for an unknown result, the service's own words quoted. */
  words: string;
}

/** The service's own words for a result: its texts and codes, e.g. `"Fax Foo" (code 6123)`. */
export function serviceWords(f: ResultFields): string {
  const texts = [...new Set([f.resultInfo, f.errorInfo].map((t) => (t ?? "").trim()).filter((t) => t !== ""))];
  const codes = [
    ...new Set([f.resultCode, f.errorCode].map((c) => (c ?? "").trim()).filter((c) => c !== "" && c !== "0")),
  ];
  const said = texts.map((t) => `"${t.slice(0, 200)}"`).join(" / ");
  const code = codes.length ? `code ${codes.join("/")}` : "";
  if (said && code) return `${said} (${code})`;
  return said || code || "no reason given";
}

function codesOf(f: ResultFields): string[] {
  return [f.resultCode, f.errorCode].map((c) => (c ?? "").trim()).filter((c) => c !== "");
}

function textOf(f: ResultFields): string {
  return [f.resultInfo, f.errorInfo]
    .filter((t): t is string => typeof t === "string")
    .join(" \u2022 ")
    .slice(0, 2000);
}

/** Operator rules as ResultRules: a phrase is matched literally (escaped), case-insensitively. */
export function operatorRules(rules: readonly OperatorResultRule[] | undefined): ResultRule[] {
  return (rules ?? []).map((r, i) => {
    const codes = r.code === undefined ? undefined : (Array.isArray(r.code) ? r.code : [r.code]).map((c) => c.trim());
    const text = r.text ? new RegExp(r.text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i") : undefined;
    return {
      name: `queue.resultRules[${i}]`,
      codes,
      text,
      action: r.action,
      words: r.words ?? "",
      both: codes && text,
    } as ResultRule & { both?: unknown };
  });
}

/**
 * What a failed result means. Operator rules first (as they are written), then the built-in
 * rules by code, then by words: a code is more specific than a text that mentions "busy".
 */
export function explainFailure(f: ResultFields, extra: readonly ResultRule[] = []): ResultMeaning {
  const codes = codesOf(f);
  const text = textOf(f);
  const byCode = (rule: ResultRule): boolean => (rule.codes ? rule.codes.some((c) => codes.includes(c)) : false);
  const byText = (rule: ResultRule): boolean => (rule.text ? rule.text.test(text) : false);
  const found =
    extra.find((rule) =>
      (rule as { both?: unknown }).both ? byCode(rule) && byText(rule) : byCode(rule) || byText(rule),
    ) ??
    BUILT_IN_RESULT_RULES.find(byCode) ??
    BUILT_IN_RESULT_RULES.find(byText);
  if (found) return { rule: found.name, action: found.action, words: found.words || serviceWords(f) };
  return { rule: null, action: "retry", words: `the fax service reported ${serviceWords(f)}` };
}
