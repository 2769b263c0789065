// CLI entry (commander). Filled in as the stages land.
import { Command } from 'commander';

export async function run(argv: string[]): Promise<void> {
  const program = new Command('faxgate');
  program.description('e-mail-to-fax and print-to-fax gateway');
  await program.parseAsync(argv);
}
