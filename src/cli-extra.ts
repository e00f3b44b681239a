/**
 * Operator commands beyond serving: check-config, engines. Loaded on demand by cli.ts.
 */
export async function run(_command: string, _argv: string[]): Promise<boolean> {
  return false;
}
