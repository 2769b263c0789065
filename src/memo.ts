// Answers of a pure function of one string, remembered for the last few thousand inputs: every
// RCPT TO's number is parsed twice with libphonenumber-js, and an office sends to the same numbers
// again and again. Bounded: when full the whole table is dropped, so hostile input cannot grow it.

export function memoize<R>(fn: (key: string) => R, max = 2000): (key: string) => R {
  const known = new Map<string, R>();
  return (key) => {
    if (known.has(key)) return known.get(key)!;
    const answer = fn(key);
    if (known.size >= max) known.clear();
    known.set(key, answer);
    return answer;
  };
}
