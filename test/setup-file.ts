// Runs before every test file (setupFiles in both vitest configs).
import { afterAll } from "vitest";
import { runFileCleanups } from "./helpers/file-cleanup.js";

afterAll(runFileCleanups);
