/**
 * The string order of fusion's tie-breaks (§16.3 "lexicographically smaller stringified id"):
 * Unicode **code-point** order, which is also the byte order of the strings' UTF-8 (what Python's
 * `<` on `str`, Rust's `Ord` on `String` and C++'s `std::string` compare, and what §8 calls
 * "byte-ordered"). JavaScript's `<` compares UTF-16 code units instead, and the two disagree
 * exactly when a string holds a character above U+FFFF (a surrogate pair, 0xD800–0xDFFF) at the
 * first difference against one in U+E000–U+FFFF: code units put the pair first, code points last.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/**
 * A code unit's place in code-point order at a first difference: surrogates (0xD800–0xDFFF, a
 * character ≥ U+10000) rank above 0xE000–0xFFFF; everything else keeps its value.
 */
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}
