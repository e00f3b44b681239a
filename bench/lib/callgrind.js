/**
 * Self instructions per function and per origin from a callgrind dump taken with
 * `--dump-instr=yes`, JIT code named from V8's perf map (`node --perf-basic-prof`, one line per
 * code object: start, size, name). Used by bench/wire-instructions.js --profile.
 */

/** Sorted [start, end, name] ranges of a perf map's text. */
function perfRanges(text) {
  const ranges = [];
  for (const line of text.split('\n')) {
    const first = line.indexOf(' ');
    const second = line.indexOf(' ', first + 1);
    if (first < 0 || second < 0) continue;
    const start = parseInt(line.slice(0, first), 16);
    ranges.push([start, start + parseInt(line.slice(first + 1, second), 16), line.slice(second + 1)]);
  }
  return ranges.sort((a, b) => a[0] - b[0]);
}

function finder(ranges) {
  return (address) => {
    let lo = 0;
    let hi = ranges.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid][0] <= address) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return at >= 0 && address < ranges[at][1] ? ranges[at][2] : undefined;
  };
}

/** Where a function's instructions belong, coarse enough to compare two servers. */
export function originOf(name) {
  const url = /(file:\/\/\S+|node:[\w/]+|\/\S+\.js)/.exec(name)?.[1];
  if (url !== undefined) {
    const modules = url.lastIndexOf('/node_modules/');
    if (modules >= 0) return `pkg:${url.slice(modules + 14).split('/')[0]}`;
    const dist = url.lastIndexOf('/dist/');
    if (dist >= 0)
      return `gateway ${url
        .slice(dist + 6)
        .split('/')
        .slice(0, 2)
        .join('/')}`;
    if (url.startsWith('node:')) return 'node (JavaScript)';
    return url.includes('/bench/') ? `bench ${url.slice(url.lastIndexOf('/') + 1).split(':')[0]}` : 'JavaScript, other';
  }
  if (name.startsWith('Builtin:') || name.startsWith('Builtins_')) return 'V8 builtins (inline caches, object and array operations)';
  if (/v8::internal::compiler::|v8::internal::maglev|Zone/.test(name)) return 'V8 compiler';
  if (/Scaveng|Heap::|MarkCompact|Marking|Sweeper|Evacuat|IteratePointers|RememberedSet|SlotSet|Pretenuring|NewSpace/.test(name)) {
    return 'V8 garbage collector';
  }
  if (/Json|Dtoa|DoubleToCString/.test(name)) return 'V8 JSON';
  if (/^node::|uv_|llhttp/.test(name)) return 'node and libuv (native)';
  if (/^(__|_int_|malloc|free|cfree|memcpy|memmove|memset|strlen)/.test(name)) return 'libc';
  if (/sha256|HMAC|EVP_|OPENSSL|CRYPTO/.test(name)) return 'OpenSSL';
  if (name.startsWith('RegExp')) return 'regular expressions';
  return 'V8 runtime (native)';
}

/**
 * `{ total, origins, functions, events }` per request: self costs only (a call's inclusive cost,
 * the line after `calls=`, belongs to the callee). `total` is instructions (`Ir`); origins and
 * functions are [name, instructions] pairs, largest first. With the cache simulation on
 * (`--cache-sim=yes`) a dump holds more events than `Ir`; `events` then maps each event name to
 * its own origins and functions lists, the same shape (a cost line may leave trailing zero events
 * out, as callgrind's format allows).
 */
export function summarizeCallgrind(dump, perfMap, requests) {
  const name = finder(perfRanges(perfMap));
  const names = new Map();
  const self = new Map();
  let eventNames = ['Ir'];
  let positions = 1;
  let fn = '?';
  let address = 0;
  let afterCall = false;
  let total = 0;
  for (const line of dump.split('\n')) {
    if (line.startsWith('events:')) {
      eventNames = line.slice(7).trim().split(/\s+/);
      continue;
    }
    if (line.startsWith('positions:')) {
      positions = line.slice(10).trim().split(/\s+/).length;
      continue;
    }
    const defined = /^c?fn=\((\d+)\) (.*)$/.exec(line);
    if (defined) names.set(defined[1], defined[2]);
    if (line.startsWith('fn=')) {
      fn = names.get(/^fn=\((\d+)\)/.exec(line)[1]) ?? fn;
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCall = true;
      continue;
    }
    const c = line.charCodeAt(0);
    if (!(c === 43 || c === 45 || c === 42 || (c >= 48 && c <= 57))) continue; // a cost line: + - * or a digit
    const parts = line.split(' ');
    const position = parts[0];
    if (position.startsWith('0x')) address = parseInt(position, 16);
    else if (position[0] === '+') address += parseInt(position.slice(1), 16);
    else if (position[0] === '-') address -= parseInt(position.slice(1), 16);
    if (afterCall) {
      afterCall = false;
      continue;
    }
    if (parts.length <= positions) continue;
    const key = name(address) ?? fn;
    let costs = self.get(key);
    if (!costs) self.set(key, (costs = new Float64Array(eventNames.length)));
    for (let e = 0; e < eventNames.length && positions + e < parts.length; e++) {
      const cost = Number(parts[positions + e]);
      if (Number.isFinite(cost)) costs[e] += cost;
    }
  }
  const perEvent = (e) => {
    const origins = new Map();
    const functions = new Map();
    for (const [key, costs] of self) {
      if (costs[e] === 0) continue;
      functions.set(key, costs[e] / requests);
      origins.set(originOf(key), (origins.get(originOf(key)) ?? 0) + costs[e] / requests);
    }
    const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
    return { origins: sorted(origins), functions: sorted(functions) };
  };
  const events = new Map(eventNames.map((event, e) => [event, perEvent(e)]));
  const instructions = events.get('Ir') ?? perEvent(0);
  for (const [, n] of instructions.origins) total += n;
  return { total, origins: instructions.origins, functions: instructions.functions, events };
}
