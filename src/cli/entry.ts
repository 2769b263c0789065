// Run the CLI from source (tests and development): node --import tsx src/cli/entry.ts <command>
import { run } from "./main.js";

await run(process.argv);
