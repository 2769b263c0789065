// The Dockerfile as `docker build` would read it, without a Docker engine: every file it copies from
// the build context exists and is not left out by .dockerignore, every package it installs is in
// the base image's Debian (bookworm, as this machine when it is bookworm), every command its RUN
// lines and the entrypoint call is there, and the runtime image has LibreOffice for office files.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dockerfile = readFileSync(path.join(repo, "Dockerfile"), "utf8");
// `\` continuations joined, comments dropped
const instructions = dockerfile
  .replace(/\\\n/g, " ")
  .split("\n")
  .filter((l) => l.trim() && !l.trim().startsWith("#"));
const stages = dockerfile.split(/^FROM /m).slice(1);
const runtime = stages.at(-1)!;
const ignored = readFileSync(path.join(repo, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));
const release = existsSync("/etc/os-release") ? readFileSync("/etc/os-release", "utf8") : "";
const onBookworm = /VERSION_CODENAME=bookworm/.test(release) && spawnSync("apt-cache", ["--version"]).status === 0;

describe("Dockerfile", () => {
  it("builds from bookworm images", () => {
    expect(stages.map((s) => s.split(/\s/)[0])).toEqual(["node:20-bookworm-slim", "node:20-bookworm-slim"]);
  });

  it("copies only files that exist and that .dockerignore lets into the build context", () => {
    const copies = instructions.filter((l) => /^COPY (?!--from)/.test(l));
    expect(copies.length).toBeGreaterThan(5);
    for (const line of copies) {
      const sources = line.split(/\s+/).slice(1, -1);
      for (const src of sources) {
        expect(existsSync(path.join(repo, src)), `${line}: ${src} exists`).toBe(true);
        const top = src.split("/")[0]!;
        expect(ignored.includes(top) || ignored.includes(src), `${line}: ${src} is in .dockerignore`).toBe(false);
      }
    }
  });

  it("installs LibreOffice in the runtime image, so office documents convert there too", () => {
    const installs = runtime.replace(/\\\n/g, " ");
    // what a clinic sends: Writer, Calc and Impress files, set in Microsoft fonts' metric twins
    for (const p of [
      "libreoffice-writer-nogui",
      "libreoffice-calc-nogui",
      "libreoffice-impress-nogui",
      "fonts-crosextra-carlito",
      "fonts-crosextra-caladea",
      "fonts-liberation",
    ])
      expect(installs, p).toMatch(new RegExp(`apt-get install[^\\n]*\\b${p}\\b`));
  });

  it("publishes the console and keeps the sandbox's outbox in the data volume", () => {
    const expose = instructions
      .find((l) => l.startsWith("EXPOSE "))!
      .split(/\s+/)
      .slice(1);
    expect(expose).toEqual(expect.arrayContaining(["2525", "8025", "9464"]));
    const entry = readFileSync(path.join(repo, "docker/entrypoint.sh"), "utf8");
    // the sandbox's console on 127.0.0.1 would be unreachable through docker run -p
    expect(entry).toMatch(/start --smtp-listen \S+ --web-listen "\$\{FAXGATE_SANDBOX_WEB:-0\.0\.0\.0:8025\}"/);
    // the sandbox runs in the data volume, so data/outbox (its mails) is in the volume too
    expect(entry).toMatch(/cd \/var\/lib\/faxgate\n/);
    expect(instructions.find((l) => l.startsWith("VOLUME "))).toContain('"/var/lib/faxgate"');
    const mounted = readFileSync(path.join(repo, "docker/faxgate.yaml"), "utf8");
    expect(mounted).toMatch(/^web:\n {2}listen: 0\.0\.0\.0:8025/m);
  });

  it.skipIf(!onBookworm)(
    "installs only packages bookworm has, and calls only commands it has",
    () => {
      const packages = [...dockerfile.replace(/\\\n/g, " ").matchAll(/apt-get install ([^&\n]+)/g)].flatMap((m) =>
        m[1]!.split(/\s+/).filter((w) => w && !w.startsWith("-")),
      );
      expect(packages).toContain("libreoffice-writer-nogui");
      // one apt-cache call for all of them: each call reads the whole package lists
      const shown = spawnSync("apt-cache", ["show", "--no-all-versions", ...packages], { encoding: "utf8" }).stdout;
      for (const p of packages) expect(shown.includes(`Package: ${p}\n`), `${p} is a bookworm package`).toBe(true);
      // the first word of each command in the RUN lines, and of the entrypoint's lines
      const runs = instructions.filter((l) => l.startsWith("RUN ")).map((l) => l.slice(4));
      const entry = readFileSync(path.join(repo, "docker/entrypoint.sh"), "utf8")
        .split("\n")
        .filter((l) => l.trim() && !l.trim().startsWith("#"));
      const commands = new Set(
        [...runs, ...entry]
          .flatMap((l) => l.split(/&&|\|\||;|\bthen\b|\bif\b/))
          .map(
            (c) =>
              c
                .trim()
                .replace(/^exec\s+/, "")
                .split(/\s+/)[0]!,
          )
          .filter((w) => /^[a-z][a-z0-9_-]*$/.test(w))
          .filter((w) => !["fi", "set", "unset", "shift", "exec", "cd", "echo", "else", "[", "export"].includes(w)),
      );
      expect([...commands]).toEqual(expect.arrayContaining(["apt-get", "groupadd", "useradd", "npm", "node"]));
      for (const cmd of commands) {
        const r = spawnSync("sh", ["-c", `command -v ${cmd}`]);
        expect(r.status, `${cmd} exists on Debian bookworm`).toBe(0);
      }
    },
    180_000,
  );
});
