/**
 * A folder laid out and updated exactly as the kubelet lays out a ConfigMap volume (its
 * AtomicWriter): the files live in a timestamped folder `..2026_12_01_10_00_00.123456789`,
 * `..data` is a symlink to it, and each visible file is a symlink `name -> ..data/name`.
 * An update never writes a visible file: it writes a new timestamped folder, points a temporary
 * symlink `..data_tmp` at it, renames that over `..data` (one atomic step) and removes the old
 * folder. A watcher that waits for a write to `config.json` itself never sees a thing.
 */
import { existsSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

let sequence = 0;

/** `..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN`, unique even within one millisecond. */
function timestampedName(): string {
  const now = new Date();
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  const stamp = `${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}`;
  return `..${stamp}.${pad(now.getUTCMilliseconds(), 3)}${pad(++sequence % 1_000_000, 6)}`;
}

function writePayload(dir: string, files: Record<string, string>): string {
  const name = timestampedName();
  mkdirSync(path.join(dir, name));
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, name, file), text);
  return name;
}

/** Lay out a new volume in `dir` (created if missing) holding `files`. */
export function createConfigMapVolume(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const payload = writePayload(dir, files);
  symlinkSync(payload, path.join(dir, '..data'));
  for (const file of Object.keys(files)) symlinkSync(path.join('..data', file), path.join(dir, file));
}

/** Replace the volume's content the kubelet's way: one atomic rename of the `..data` symlink. */
export function updateConfigMapVolume(dir: string, files: Record<string, string>): void {
  const previous = readlinkSync(path.join(dir, '..data'));
  const payload = writePayload(dir, files);
  const temporary = path.join(dir, '..data_tmp');
  symlinkSync(payload, temporary);
  renameSync(temporary, path.join(dir, '..data'));
  // Keys new in this version get their visible symlink after the swap, as the kubelet does.
  for (const file of Object.keys(files)) {
    if (!existsSync(path.join(dir, previous, file))) symlinkSync(path.join('..data', file), path.join(dir, file));
  }
  rmSync(path.join(dir, previous), { recursive: true, force: true });
}
