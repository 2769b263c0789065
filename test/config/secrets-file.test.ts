// The secrets file's format is systemd's EnvironmentFile: the same file serves the unit and faxgate.
import { describe, expect, it } from "vitest";
import { parseSecretsText, replaceSecret } from "../../src/config/secrets-file.js";

describe("secrets file", () => {
  it("reads NAME=VALUE lines as systemd does: comments, export, quotes, = inside values", () => {
    const text =
      '# keys\n\nALICE_FAX_KEY=abc=def\nexport BOB="b c \\"q\\""\nCAROL=\'x y\'\n  SPACED = v  \nnot a line\n;old\n';
    expect(parseSecretsText(text)).toEqual({ ALICE_FAX_KEY: "abc=def", BOB: 'b c "q"', CAROL: "x y", SPACED: "v" });
  });

  it("replaces one variable in place and keeps the rest of the file as it was", () => {
    const text = "# keys\nALICE_FAX_KEY=old\n# ALICE_FAX_KEY=commented\nexport BOB=b\n";
    expect(replaceSecret(text, "ALICE_FAX_KEY", "new")).toBe(
      "# keys\nALICE_FAX_KEY=new\n# ALICE_FAX_KEY=commented\nexport BOB=b\n",
    );
    expect(replaceSecret(text, "BOB", "n")).toBe(
      "# keys\nALICE_FAX_KEY=old\n# ALICE_FAX_KEY=commented\nexport BOB=n\n",
    );
    expect(replaceSecret(text, "NOPE", "x")).toBeNull();
  });
});
