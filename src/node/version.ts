/**
 * The package version, read once from package.json: the one place it is written down. The file
 * sits two levels above this module both in src/node and in dist/node.
 */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const version = typeof pkg === 'object' && pkg !== null ? (pkg as { version?: unknown }).version : undefined;
  if (typeof version !== 'string') throw new Error('package.json has no version');
  return version;
}

export const PACKAGE_VERSION = readVersion();
