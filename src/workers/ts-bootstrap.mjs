// Used only when faxgate runs from its TypeScript sources (tests, benches, `tsx`): Node 20 does
// not pass tsx's loader on to worker threads, so the worker loads ./tasks.ts through tsx's API.
// The built daemon (dist/) runs dist/workers/tasks.js directly and never reads this file.
import { tsImport } from 'tsx/esm/api';

const tasks = await tsImport(new URL('./tasks.ts', import.meta.url).href, import.meta.url);
export default tasks.default;
