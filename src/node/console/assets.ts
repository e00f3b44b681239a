/**
 * The console's static files: the page, its script and style from the package's `console/`
 * folder (shipped as is: no build step), and uPlot from its npm package. Read once, on first
 * request, and kept in memory; only the names listed here are served (no path from the URL
 * ever reaches the file system).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** `console/` at the package root: three levels up from src/node/console and dist/node/console alike. */
const CONSOLE_DIR = fileURLToPath(new URL('../../../console/', import.meta.url));
const require = createRequire(import.meta.url);

interface Asset {
  file: () => string;
  contentType: string;
}

export const ASSETS: Readonly<Record<string, Asset>> = {
  'index.html': { file: () => `${CONSOLE_DIR}index.html`, contentType: 'text/html; charset=utf-8' },
  'console.js': { file: () => `${CONSOLE_DIR}console.js`, contentType: 'text/javascript; charset=utf-8' },
  'explorer.js': { file: () => `${CONSOLE_DIR}explorer.js`, contentType: 'text/javascript; charset=utf-8' },
  'console.css': { file: () => `${CONSOLE_DIR}console.css`, contentType: 'text/css; charset=utf-8' },
  'uPlot.js': { file: () => require.resolve('uplot/dist/uPlot.iife.min.js'), contentType: 'text/javascript; charset=utf-8' },
  'uPlot.css': { file: () => require.resolve('uplot/dist/uPlot.min.css'), contentType: 'text/css; charset=utf-8' },
};

const cache = new Map<string, Promise<Uint8Array>>();

/** The bytes of a listed asset, or undefined for any other name. */
export function assetBytes(name: string): Promise<Uint8Array> | undefined {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return undefined;
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = readFile(asset.file());
    bytes.catch(() => cache.delete(name));
    cache.set(name, bytes);
  }
  return bytes;
}
