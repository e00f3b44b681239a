/**
 * Operator commands beyond serving: check-config, engines, adapter, eval. Loaded on demand by cli.ts.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkConfig } from './check-config.js';
import { engines } from './engines.js';
import { adapterCommand } from './adapter.js';

const DEFAULT_CONFIG = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../config/default.json');

/** Runs `command` if it is one of these; resolves false for a command it does not know. */
export async function run(command: string, argv: string[]): Promise<boolean> {
  let code: number;
  switch (command) {
    case 'check-config':
      code = await checkConfig(argv, DEFAULT_CONFIG);
      break;
    case 'engines':
      code = await engines(argv);
      break;
    case 'adapter':
      code = await adapterCommand(argv);
      break;
    case 'eval': {
      // Loaded on demand: it brings the evaluation modules the other commands do not need.
      const { evalCommand } = await import('./eval.js');
      code = await evalCommand(argv, DEFAULT_CONFIG);
      break;
    }
    default:
      return false;
  }
  // Exit explicitly: probed engines may leave sockets or timers behind; flush stdout first.
  await new Promise<void>((done) => process.stdout.write('', () => done()));
  process.exit(code);
}
