// `faxgate emulator`: the emulator as a standalone process. One JSON line on stdout says where it
// listens and which keys exist (so scripts can read it); everything else is logged to stderr.
import type { Command } from 'commander';
import { createLogger } from '../log/logger.js';
import { parseHostPort } from '../config/host-port.js';
import { FaxgateError } from '../errors.js';
import { startEmulator } from './index.js';

export function parseListen(value: string): { host: string; port: number } {
  return parseHostPort(value, '--listen', 'USAGE');
}

export function registerEmulatorCommand(program: Command): void {
  program
    .command('emulator')
    .description('Run the fax service emulator (HTTPS, self-signed certificate in the data folder)')
    .option('--listen <host:port>', 'address to listen on', '127.0.0.1:8443')
    .option('--data <dir>', 'data folder (database, documents, certificate)', './emulator-data')
    .option('--seed <file>', 'seed file (JSON or YAML): account, users, keys, contacts')
    .option('--variant <a|b>', 'API response variant', 'a')
    .option('--delay-ms <n>', 'how long a new fax stays processing', '2000')
    .action(async (o: { listen: string; data: string; seed?: string; variant: string; delayMs: string }) => {
      if (o.variant !== 'a' && o.variant !== 'b') throw new FaxgateError('USAGE', `--variant must be a or b, got "${o.variant}"`);
      const delayMs = Number(o.delayMs);
      if (!Number.isInteger(delayMs) || delayMs < 0) throw new FaxgateError('USAGE', `--delay-ms must be a whole number >= 0, got "${o.delayMs}"`);
      const { host, port } = parseListen(o.listen);
      const logger = createLogger({ format: 'json', destination: process.stderr as never }).child({ component: 'emulator' });
      const emu = await startEmulator({ dataDir: o.data, host, port, seed: o.seed, variant: o.variant, delayMs, logger });
      process.stdout.write(`${JSON.stringify({
        event: 'listening',
        baseUrl: emu.baseUrl,
        caFile: emu.caFile,
        adminKey: emu.adminKey,
        keys: emu.keys.map((k) => ({ email: k.email, access: k.access, token: k.token })),
      })}\n`);
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) process.exit(1); // a second signal forces
          stopping = true;
          logger.info({ signal }, 'emulator stopping');
          emu.close().then(resolve, (err: unknown) => {
            logger.error({ err }, 'emulator close failed');
            resolve();
          });
        };
        process.on('SIGINT', () => stop('SIGINT'));
        process.on('SIGTERM', () => stop('SIGTERM'));
      });
    });
}
