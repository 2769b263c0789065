// Starts each run with an empty log copy, so the secret check reads only this run's lines.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { LOG_COPY } from './log-copy.js';

export default function setup(): void {
  mkdirSync(path.dirname(LOG_COPY), { recursive: true });
  rmSync(LOG_COPY, { force: true });
}
